// SPDX-License-Identifier: Apache-2.0
// Starting and stopping `llmux` processes for the e2e tests written with node's test runner
// (openai-node/, codex/). tests/e2e/npm_test.sh copies this file next to each test.
import { spawn } from 'node:child_process';

const BINARY = process.env.LLMUX_BINARY;

// Every process startLlmux() started (the tests stop them all in `after`).
export const children = [];

// Spawns `llmux ARGS` and resolves with {child, ready} once its JSON ready line arrives on
// stdout; rejects if it exits first or stays silent for 10 s.
export function startLlmux(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(BINARY, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      reject(new Error(`llmux ${args.join(' ')}: no ready line within 10 s; stderr: ${err}`));
    }, 10_000);
    child.stderr.on('data', (d) => { err += d; });
    child.stdout.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0 && !child.readyLine) {
        child.readyLine = out.slice(0, nl);
        clearTimeout(timer);
        try {
          resolve({ child, ready: JSON.parse(child.readyLine) });
        } catch (e) {
          reject(new Error(`malformed ready line: ${child.readyLine}`));
        }
      }
    });
    child.on('exit', (code, signal) => {
      child.exitStatus = { code, signal };
      clearTimeout(timer);
      if (!child.readyLine) {
        reject(new Error(`llmux ${args.join(' ')} exited (${code ?? signal}) before ready: ${err}`));
      }
    });
    child.stderrText = () => err;
  });
}

// SIGTERM, then the exit status (code, or null after SIGKILL at the 10 s bound).
export function stop(child) {
  return new Promise((resolve) => {
    if (child.exitStatus) return resolve(child.exitStatus.code);
    const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', (code) => {
      clearTimeout(kill);
      resolve(code);
    });
    child.kill('SIGTERM');
  });
}
