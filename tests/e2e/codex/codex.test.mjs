// SPDX-License-Identifier: Apache-2.0
// The real OpenAI Codex CLI (`codex exec`, pinned in package-lock.json) against two `llmux sim`
// playing script.yaml, through `llmux gateway` running the seed's routing (examples/seed.yaml,
// its backends rewritten to the loopback simulators) with the profile `dgx`, and straight to one
// simulator with `dgx-direct` — the profiles `llmux client-config codex --codex-home` wrote. Each
// run must exit 0 with the scripted answer: one turn, one resumed turn, and a tool turn where
// Codex runs `echo llmux-tool-ok` and sends its output back (only that output selects the final
// answer, so the answer proves the function_call_output arrived).
//
// Run by CTest (tests/e2e/CMakeLists.txt) with LLMUX_BINARY and LLMUX_SOURCE_DIR in the
// environment. Everything listens on free loopback ports and is stopped by this test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { children, startLlmux, stop } from './llmux_procs.mjs';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const BINARY = process.env.LLMUX_BINARY;
const SOURCE_DIR = process.env.LLMUX_SOURCE_DIR;
const HERE = dirname(fileURLToPath(import.meta.url));
const CODEX = join(HERE, 'node_modules', '.bin', 'codex');

let workDir;
let codexHome;
let project;

// `codex exec` with the given arguments: {status, stdout, stderr}, bounded to 120 s.
function codex(args) {
  const r = spawnSync(CODEX, ['exec', ...args], {
    cwd: project,
    env: { ...process.env, CODEX_HOME: codexHome, NO_COLOR: '1' },
    encoding: 'utf8',
    timeout: 120_000,
    input: '',
  });
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '', error: r.error };
}

// Options every run shares: no git repository needed, and no sandbox (the one command the script
// asks for is `echo`; a container may lack what Codex's sandbox needs).
const COMMON = ['--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox'];

function expectAnswer(r, answer, what) {
  const all = `stdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
  assert.equal(r.error, undefined, `${what}: ${r.error}\n${all}`);
  assert.equal(r.status, 0, `${what}: codex exited ${r.status}\n${all}`);
  assert.ok(r.stdout.includes(answer), `${what}: the answer "${answer}" is missing\n${all}`);
}

before(async () => {
  assert.ok(BINARY && SOURCE_DIR, 'LLMUX_BINARY and LLMUX_SOURCE_DIR must be set');
  workDir = mkdtempSync(join(tmpdir(), 'llmux-e2e-codex-'));
  codexHome = join(workDir, 'codex-home');
  project = join(workDir, 'project');
  mkdirSync(project);
  const sim = ['sim', '--host', '127.0.0.1', '--port', '0', '--time-scale', '100',
               '--script', join(HERE, 'script.yaml')];
  const [s1, s2] = await Promise.all([startLlmux(sim), startLlmux(sim)]);
  let yaml = readFileSync(join(SOURCE_DIR, 'examples/seed.yaml'), 'utf8');
  const ports = [s1.ready.port, s2.ready.port];
  let n = 0;
  yaml = yaml.replace(/url: http:\/\/[^\s#]+/g, () => `url: http://127.0.0.1:${ports[n++]}`);
  assert.equal(n, 2, 'examples/seed.yaml should name two backends');
  yaml = yaml.replace(/^listen: .*$/m, 'listen: "127.0.0.1:0"').replace(/^threads: .*$/m, 'threads: 2');
  const cfg = join(workDir, 'seed.yaml');
  writeFileSync(cfg, yaml);
  const gw = await startLlmux(['gateway', '--config', cfg]);
  // A user's config.toml with a setting of their own: it must survive the merge.
  mkdirSync(codexHome);
  writeFileSync(join(codexHome, 'config.toml'), '# mine\nhide_agent_reasoning = false\n');
  const cc = spawnSync(BINARY, ['client-config', 'codex',
    '--gateway', `http://127.0.0.1:${gw.ready.port}`,
    '--direct', `http://127.0.0.1:${s1.ready.port}`,
    '--codex-home', codexHome], { encoding: 'utf8' });
  assert.equal(cc.status, 0, `client-config codex failed: ${cc.stderr}`);
  const merged = readFileSync(join(codexHome, 'config.toml'), 'utf8');
  assert.ok(merged.includes('hide_agent_reasoning = false'), merged);
});

after(async () => {
  await Promise.all(children.map(stop));
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

test('a turn through the gateway (profile dgx), then the same session resumed', () => {
  const first = codex(['-p', 'dgx', ...COMMON, 'say hello']);
  expectAnswer(first, 'Hello from the scripted simulator.', 'codex exec -p dgx');
  const id = /session id: ([0-9a-f-]{36})/.exec(first.stdout + first.stderr)?.[1];
  assert.ok(id, `no session id in codex's output:\n${first.stdout}\n${first.stderr}`);
  const resumed = codex(['-p', 'dgx', ...COMMON, 'resume', id, 'once more']);
  expectAnswer(resumed, 'Resumed and answered.', `codex exec resume ${id}`);
});

test('a turn straight to one simulator (profile dgx-direct)', () => {
  expectAnswer(codex(['-p', 'dgx-direct', ...COMMON, 'say hello']),
               'Hello from the scripted simulator.', 'codex exec -p dgx-direct');
});

test('a tool turn through the gateway: Codex runs the command and sends its output back', () => {
  const r = codex(['-p', 'dgx', ...COMMON, 'run the tool']);
  expectAnswer(r, 'The command printed llmux-tool-ok.', 'codex exec -p dgx (tool turn)');
});
