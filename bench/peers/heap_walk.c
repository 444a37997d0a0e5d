// SPDX-License-Identifier: Apache-2.0
// heap_walk: what a running llmux gateway's worker holds in mimalloc's heap, by block size.
// Preloaded into the gateway (LD_PRELOAD) by bench/heap_by_size.sh, which calls these functions
// in the worker thread with gdb; a mimalloc heap belongs to its thread, so that thread must make
// the call.
//
// llmux_heap_dump(path): one line per block size: block size, pages, live blocks, committed bytes
// (the pages' memory, live or free). Committed minus live is memory held in partly used pages.
// llmux_heap_names(path, size): for every live block of `size` bytes, the first of its first four
// words that points into the executable (a vtable, a coroutine's resume function, an Asio
// operation's completion function after its queue link: what the block is), as "WORD:OFFSET"
// (the word's index, the offset from the executable's first mapping), one per line; when none
// does, "-", a tab and its first 32 bytes (printable ones as they are); the script counts them and
// names them with addr2line or nm.
#include <mimalloc.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  size_t block_size, pages, live, committed;
} row_t;

static row_t rows[512];
static int nrows;

static bool count_area(const mi_heap_t* heap, const mi_heap_area_t* area, void* block,
                       size_t block_size, void* arg) {
  (void)heap, (void)block, (void)block_size, (void)arg;
  int i = 0;
  while (i < nrows && rows[i].block_size != area->block_size) ++i;
  if (i == nrows) {
    if (nrows == (int)(sizeof rows / sizeof rows[0])) return true;
    memset(&rows[nrows], 0, sizeof rows[0]);
    rows[nrows++].block_size = area->block_size;
  }
  rows[i].pages++;
  rows[i].live += area->used;
  rows[i].committed += area->committed;
  return true;
}

int llmux_heap_dump(const char* path) {
  nrows = 0;
  mi_heap_visit_blocks(mi_heap_get_default(), false, count_area, NULL);
  FILE* f = fopen(path, "w");
  if (!f) return -1;
  for (int i = 0; i < nrows; ++i)
    fprintf(f, "%zu %zu %zu %zu\n", rows[i].block_size, rows[i].pages, rows[i].live,
            rows[i].committed);
  return fclose(f) == 0 ? nrows : -1;
}

static uintptr_t exe_lo, exe_hi;
static size_t wanted;
static FILE* out;

static bool name_block(const mi_heap_t* heap, const mi_heap_area_t* area, void* block,
                       size_t block_size, void* arg) {
  (void)heap, (void)block_size, (void)arg;
  if (!block || area->block_size != wanted) return true;
  const uintptr_t* words = (const uintptr_t*)block;
  for (int i = 0; i < 4 && (size_t)(i + 1) * sizeof(uintptr_t) <= wanted; ++i) {
    if (words[i] >= exe_lo && words[i] < exe_hi) {
      fprintf(out, "%d:%lx\n", i, (unsigned long)(words[i] - exe_lo));
      return true;
    }
  }
  // none: its first bytes, printable ones as they are (a string's text shows what it is)
  fputs("-\t", out);
  const unsigned char* bytes = (const unsigned char*)block;
  for (size_t i = 0; i < 32 && i < wanted; ++i)
    fputc(bytes[i] >= 0x20 && bytes[i] < 0x7f && bytes[i] != '\\' ? bytes[i] : '.', out);
  fputc('\n', out);
  return true;
}

int llmux_heap_names(const char* path, size_t size) {
  // The executable's mappings: the first mapping of a file is the executable's (a PIE's load base).
  FILE* maps = fopen("/proc/self/maps", "r");
  if (!maps) return -1;
  char line[1024], exe[512] = "";
  exe_lo = exe_hi = 0;
  while (fgets(line, sizeof line, maps)) {
    unsigned long lo, hi;
    char file[512] = "";
    if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %511s", &lo, &hi, file) < 2 || file[0] != '/')
      continue;
    if (!exe[0]) {
      strcpy(exe, file);
      exe_lo = lo;
    }
    if (strcmp(file, exe) == 0) exe_hi = hi;
  }
  fclose(maps);
  out = fopen(path, "w");
  if (!out) return -1;
  wanted = size;
  mi_heap_visit_blocks(mi_heap_get_default(), true, name_block, NULL);
  return fclose(out) == 0 ? 0 : -1;
}
