// SPDX-License-Identifier: Apache-2.0
// The real Claude Code CLI (`claude -p`, pinned in package-lock.json) against two `llmux sim`
// playing script.yaml, through `llmux gateway` (one route, /v1/messages by prefix, round-robined
// over both; a client key required), with the settings `llmux client-config claude --settings`
// merged into a settings.json that already held a setting of the user's. Each run must exit 0
// with the scripted answer: a turn, the same session resumed, and a tool turn in which Claude
// Code runs a command through its Bash tool (allowed with --allowedTools, as a root user may not
// skip permissions) and sends its output back (only that output selects the final answer).
//
// run.sh starts this test inside a network namespace whose only interface is loopback, and the
// settings turn non-essential traffic off: the test checks both, and that the gateway saw
// nothing but POST /v1/messages?beta=true (its usage counted) and Claude Code's debug log names
// no failed attempt to reach anything else.
//
// Run by CTest (tests/e2e/CMakeLists.txt) with LLMUX_BINARY and LLMUX_SOURCE_DIR in the
// environment. Everything listens on free loopback ports and is stopped by this test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { children, startLlmux, stop } from './llmux_procs.mjs';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const BINARY = process.env.LLMUX_BINARY;
const HERE = dirname(fileURLToPath(import.meta.url));
const CLAUDE = join(HERE, 'node_modules', '.bin', 'claude');
const MODEL = 'Qwen3.6-35B-A3B';
// The gateway's client key, read by Claude Code from this variable (client-config --token-env).
const KEY_VARIABLE = 'LLMUX_E2E_KEY';
const KEY = `sk-e2e-${randomBytes(12).toString('hex')}`;

let workDir;
let configDir;
let project;
let accessLog;
let gateway;
let runs = 0;

// `claude -p PROMPT OPTIONS` in the project folder: {status, stdout, stderr, json}, bounded to
// 90 s (the prompt goes first: an option with a list, as --allowedTools, would take it). Its
// environment is built from nothing but what it needs (no ANTHROPIC_*, proxy or user settings
// from the caller's), with its own HOME and CLAUDE_CONFIG_DIR under the test's folder.
function claude(prompt, options = []) {
  const debugFile = join(workDir, `claude-debug-${++runs}.txt`);
  const args = ['-p', prompt, '--output-format', 'json', '--debug-file', debugFile, ...options];
  const r = spawnSync(CLAUDE, args, {
    cwd: project,
    env: {
      PATH: process.env.PATH,
      HOME: join(workDir, 'home'),
      CLAUDE_CONFIG_DIR: configDir,
      [KEY_VARIABLE]: KEY,
      LANG: 'C.UTF-8',
      TERM: 'dumb',
      NO_COLOR: '1',
    },
    encoding: 'utf8',
    timeout: 90_000,
    input: '',
  });
  let json;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    json = undefined;
  }
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '', error: r.error, json, debugFile };
}

function expectAnswer(r, answer, what) {
  const all = `stdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
  assert.equal(r.error, undefined, `${what}: ${r.error}\n${all}`);
  assert.equal(r.status, 0, `${what}: claude exited ${r.status}\n${all}`);
  assert.ok(r.json, `${what}: no JSON result on stdout\n${all}`);
  assert.equal(r.json.is_error, false, `${what}: the result is an error\n${all}`);
  assert.equal(r.json.result, answer, `${what}: not the scripted answer\n${all}`);
}

before(async () => {
  assert.ok(BINARY, 'LLMUX_BINARY must be set');
  // Only loopback here (run.sh's `unshare -n`): /proc/self/net/dev lists this namespace's
  // interfaces.
  const interfaces = readFileSync('/proc/self/net/dev', 'utf8')
    .split('\n').slice(2).map((line) => line.split(':')[0].trim()).filter(Boolean);
  assert.deepEqual(interfaces, ['lo'],
    `this test must run in a network namespace with only loopback (run.sh); interfaces: ${interfaces}`);

  workDir = mkdtempSync(join(tmpdir(), 'llmux-e2e-claude-code-'));
  configDir = join(workDir, 'claude-config');
  project = join(workDir, 'project');
  accessLog = join(workDir, 'access.log');
  mkdirSync(project);
  mkdirSync(join(workDir, 'home'));
  const sim = ['sim', '--host', '127.0.0.1', '--port', '0', '--time-scale', '100',
               '--served-model-name', MODEL, '--script', join(HERE, 'script.yaml')];
  const [s1, s2] = await Promise.all([startLlmux(sim), startLlmux(sim)]);
  const cfg = join(workDir, 'gateway.yaml');
  writeFileSync(cfg, [
    'listen: "127.0.0.1:0"',
    'threads: 1',
    `access_log: ${JSON.stringify(accessLog)}`,
    'backends:',
    `  - {name: sim1, url: "http://127.0.0.1:${s1.ready.port}"}`,
    `  - {name: sim2, url: "http://127.0.0.1:${s2.ready.port}"}`,
    'routes:',
    '  - name: messages',
    '    match: {path_prefix: /v1/messages}   # /v1/messages?beta=true, /v1/messages/count_tokens',
    '    backends: [sim1, sim2]',
    '    policy: round_robin',
    'auth:',
    `  keys: [{name: claude-code, key: ${JSON.stringify(KEY)}}]`,
    '',
  ].join('\n'));
  gateway = await startLlmux(['gateway', '--config', cfg]);
  // A settings.json with the user's own settings: they must survive the merge.
  mkdirSync(configDir);
  const settings = join(configDir, 'settings.json');
  const mine = { permissions: { deny: ['WebFetch'] }, env: { LLMUX_E2E_MINE: 'kept' } };
  writeFileSync(settings, JSON.stringify(mine, null, 2) + '\n');
  const cc = spawnSync(BINARY, ['client-config', 'claude',
    '--gateway', `http://127.0.0.1:${gateway.ready.port}`, '--model', MODEL,
    '--token-env', KEY_VARIABLE, '--context-window', '262144', '--settings', settings],
  { encoding: 'utf8' });
  assert.equal(cc.status, 0, `client-config claude failed: ${cc.stderr}`);
  const merged = JSON.parse(readFileSync(settings, 'utf8'));
  assert.deepEqual(merged.permissions, mine.permissions);
  assert.equal(merged.env.LLMUX_E2E_MINE, 'kept');
  assert.equal(merged.env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC, '1');
  assert.equal(merged.apiKeyHelper, `printenv ${KEY_VARIABLE}`);
  assert.ok(!readFileSync(settings, 'utf8').includes(KEY), 'the key must not be written');
  assert.deepEqual(JSON.parse(readFileSync(`${settings}.bak`, 'utf8')), mine);
});

after(async () => {
  await Promise.all(children.map(stop));
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

test('a turn through the gateway, then the same session resumed', () => {
  const first = claude('say hello');
  expectAnswer(first, 'Hello from the scripted simulator.', 'claude -p');
  const id = first.json.session_id;
  assert.match(id ?? '', /^[0-9a-f-]{36}$/, `no session id in ${first.stdout}`);
  const resumed = claude('once more', ['--resume', id]);
  expectAnswer(resumed, 'Resumed and answered.', `claude -p --resume ${id}`);
  assert.equal(resumed.json.session_id, id, 'the resumed turn must continue the same session');
});

test('a tool turn: Claude Code runs the command with its Bash tool and sends the output back', () => {
  const r = claude('run the tool', ['--allowedTools', 'Bash']);
  expectAnswer(r, 'The command printed llmux-tool-ok.', 'claude -p --allowedTools Bash');
  assert.equal(r.json.num_turns, 2, `one tool call, then the answer\n${r.stdout}`);
  // The command ran in the project folder (it needed permission: it writes a file).
  assert.equal(readFileSync(join(project, 'tool-output.txt'), 'utf8'), 'llmux-tool-ok\n');
});

test('nothing but /v1/messages left Claude Code: the gateway saw only that, keyed, counted', async () => {
  assert.ok(runs >= 3, 'the turns above ran');
  // Stopping the gateway writes out its access log.
  await stop(gateway.child);
  const lines = readFileSync(accessLog, 'utf8').trim().split('\n').map((line) => JSON.parse(line));
  const all = lines.map((line) => JSON.stringify(line)).join('\n');
  // A turn, the resumed turn and the tool turn's two calls (a background call of Claude Code's
  // own would be one more, and welcome as long as it is a Messages request too).
  assert.ok(lines.length >= 4, `fewer requests than the turns above made:\n${all}`);
  for (const line of lines) {
    assert.equal(line.method, 'POST', JSON.stringify(line));
    assert.equal(line.path, '/v1/messages', JSON.stringify(line));  // logged without ?beta=true
    assert.equal(line.route, 'messages', JSON.stringify(line));
    assert.equal(line.status, 200, JSON.stringify(line));
    assert.equal(line.key, 'claude-code', JSON.stringify(line));
    assert.ok(line.prompt_tokens > 0 && line.completion_tokens > 0,
      `the stream's usage counted: ${JSON.stringify(line)}`);
  }
  assert.deepEqual([...new Set(lines.map((line) => line.backend))].sort(), ['sim1', 'sim2']);
  // Nothing else was tried: in this namespace any other host fails at once, and Claude Code's
  // debug log says so (without the settings it fetches an MCP registry and sends events to
  // api.anthropic.com, and probes the base URL with HEAD /api/hello).
  for (let i = 1; i <= runs; ++i) {
    const file = join(workDir, `claude-debug-${i}.txt`);
    assert.ok(existsSync(file), `no debug log ${file}`);
    const tried = readFileSync(file, 'utf8').split('\n')
      .filter((line) => /getaddrinfo|EAI_AGAIN|ENETUNREACH|ECONNREFUSED|api\.anthropic\.com/.test(line));
    assert.deepEqual(tried, [], `Claude Code tried to reach something else (run ${i})`);
  }
});
