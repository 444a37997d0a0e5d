// SPDX-License-Identifier: Apache-2.0
// The official `openai` npm client (v6, pinned in package.json) against `llmux gateway` running
// the seed's routing (examples/seed.yaml) in front of two `llmux sim` processes, all started here
// on free loopback ports. Chat and completions, streaming and not, /v1/responses chained with
// previous_response_id, and tool calls (chat and responses, streaming and not: the simulators play
// tools.yaml), all through the gateway.
//
// Run by CTest (tests/e2e/CMakeLists.txt) with LLMUX_BINARY (the built llmux) and
// LLMUX_SOURCE_DIR (for examples/seed.yaml) in the environment.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { children, startLlmux, stop } from './llmux_procs.mjs';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';

const BINARY = process.env.LLMUX_BINARY;
const SOURCE_DIR = process.env.LLMUX_SOURCE_DIR;
const MODEL = 'Qwen3.6-35B-A3B'; // the simulators' default served model name

let workDir;
let gateway;
let client;

before(async () => {
  assert.ok(BINARY, 'LLMUX_BINARY must name the llmux binary under test');
  assert.ok(SOURCE_DIR, 'LLMUX_SOURCE_DIR must name the source tree (for examples/seed.yaml)');
  workDir = mkdtempSync(join(tmpdir(), 'llmux-e2e-openai-'));
  const sim = ['sim', '--host', '127.0.0.1', '--port', '0', '--time-scale', '100',
               '--script', join(dirname(fileURLToPath(import.meta.url)), 'tools.yaml')];
  const [s1, s2] = await Promise.all([startLlmux(sim), startLlmux(sim)]);
  // The seed's gateway, pointed at the simulators, on a free loopback port.
  let yaml = readFileSync(join(SOURCE_DIR, 'examples/seed.yaml'), 'utf8');
  const replace = (from, to) => {
    assert.ok(yaml.includes(from), `examples/seed.yaml no longer contains ${from}`);
    yaml = yaml.replace(from, to);
  };
  // Every backend URL of the example (the seed's LAN machines), in order, becomes a loopback
  // simulator: nothing here ever connects to the example's own addresses.
  const ports = [s1.ready.port, s2.ready.port];
  let n = 0;
  yaml = yaml.replace(/url: http:\/\/[^\s#]+/g, (m) => (n < 2 ? `url: http://127.0.0.1:${ports[n++]}` : m));
  assert.equal(n, 2, 'examples/seed.yaml no longer has two backend urls');
  replace('listen: ":8080"', 'listen: "127.0.0.1:0"');
  replace('threads: 0', 'threads: 2');
  const config = join(workDir, 'gateway.yaml');
  writeFileSync(config, yaml);
  gateway = await startLlmux(['gateway', '--config', config, '--access-log',
                              join(workDir, 'access.log')]);
  assert.equal(gateway.ready.event, 'ready');
  client = new OpenAI({
    baseURL: `http://127.0.0.1:${gateway.ready.port}/v1`,
    apiKey: 'sk-llmux-e2e', // the simulators accept any key
    maxRetries: 0, // a failure must show, not be retried away
    timeout: 30_000,
  });
});

after(async () => {
  const gwExit = gateway ? await stop(gateway.child) : 0;
  for (const c of children) await stop(c);
  if (workDir) rmSync(workDir, { recursive: true, force: true });
  assert.equal(gwExit, 0, `the gateway exited ${gwExit}; stderr: ${gateway?.child.stderrText()}`);
});

// A finished response: completed, or incomplete when max_output_tokens cut it (as vLLM says).
function finishedResponse(r, maxOutput) {
  if (r.status === 'incomplete') {
    assert.equal(r.incomplete_details?.reason, 'max_output_tokens');
    assert.equal(r.usage.output_tokens, maxOutput);
  } else {
    assert.equal(r.status, 'completed');
    assert.equal(r.incomplete_details, null);
  }
}

function saneUsage(u, maxCompletion) {
  assert.ok(u, 'usage is present');
  assert.ok(u.prompt_tokens > 0, `prompt_tokens ${u.prompt_tokens}`);
  assert.ok(u.completion_tokens >= 1 && u.completion_tokens <= maxCompletion,
            `completion_tokens ${u.completion_tokens}`);
  assert.equal(u.total_tokens, u.prompt_tokens + u.completion_tokens);
}

test('chat completions, not streaming, alternate between the two servers', async () => {
  const backends = new Set();
  for (let i = 0; i < 2; i++) {
    const { data, response } = await client.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: 'Say hello.' }], max_tokens: 8 })
      .withResponse();
    backends.add(response.headers.get('x-llmux-backend'));
    assert.equal(data.object, 'chat.completion');
    assert.equal(data.model, MODEL);
    assert.equal(data.choices.length, 1);
    assert.equal(data.choices[0].message.role, 'assistant');
    assert.equal(typeof data.choices[0].message.content, 'string');
    assert.ok(data.choices[0].message.content.length > 0);
    assert.ok(['stop', 'length'].includes(data.choices[0].finish_reason));
    saneUsage(data.usage, 8);
  }
  assert.deepEqual([...backends].sort(), ['server1', 'server2']);
});

test('chat completions, streaming', async () => {
  const stream = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: 'Count to ten.' }],
    max_tokens: 12,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let chunks = 0;
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    chunks++;
    if (chunk.choices.length > 0) {
      text += chunk.choices[0].delta.content ?? '';
      finish = chunk.choices[0].finish_reason ?? finish;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.ok(chunks >= 2, `${chunks} chunks`);
  assert.ok(text.length > 0);
  assert.ok(['stop', 'length'].includes(finish), `finish_reason ${finish}`);
  saneUsage(usage, 12);
});

test('completions, not streaming, on server1', async () => {
  const { data, response } = await client.completions
    .create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 8 })
    .withResponse();
  assert.equal(response.headers.get('x-llmux-backend'), 'server1');
  assert.equal(data.object, 'text_completion');
  assert.equal(data.choices.length, 1);
  assert.ok(data.choices[0].text.length > 0);
  saneUsage(data.usage, 8);
});

test('completions, streaming', async () => {
  const stream = await client.completions.create({
    model: MODEL,
    prompt: 'Once upon a time',
    max_tokens: 10,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usage = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'text_completion');
    if (chunk.choices.length > 0) text += chunk.choices[0].text;
    if (chunk.usage) usage = chunk.usage;
  }
  assert.ok(text.length > 0);
  saneUsage(usage, 10);
});

test('responses chained with previous_response_id, all on server1', async () => {
  const first = await client.responses
    .create({
      model: MODEL,
      input: 'Tell me about lighthouses on rocky coasts and the keepers who lived in them.',
      max_output_tokens: 16,
    })
    .withResponse();
  assert.equal(first.response.headers.get('x-llmux-backend'), 'server1');
  const r1 = first.data;
  assert.equal(r1.object, 'response');
  finishedResponse(r1, 16);
  assert.ok(r1.id.startsWith('resp_'), r1.id);
  assert.ok(r1.output_text.length > 0);
  assert.ok(r1.usage.input_tokens > 0);
  assert.ok(r1.usage.output_tokens >= 1 && r1.usage.output_tokens <= 16);
  assert.equal(r1.usage.total_tokens, r1.usage.input_tokens + r1.usage.output_tokens);

  const second = await client.responses
    .create({ model: MODEL, input: 'And what did they eat?', previous_response_id: r1.id,
              max_output_tokens: 16 })
    .withResponse();
  assert.equal(second.response.headers.get('x-llmux-backend'), 'server1');
  const r2 = second.data;
  finishedResponse(r2, 16);
  assert.equal(r2.previous_response_id, r1.id);
  assert.ok(r2.output_text.length > 0);
  assert.ok(r2.usage.input_tokens > r1.usage.input_tokens + r1.usage.output_tokens,
            'the second turn carries the first one');
  assert.ok(r2.usage.input_tokens_details.cached_tokens > 0, 'the chain hits the prefix cache');

  // Retrieval by id goes to server1 too, where the store is.
  const got = await client.responses.retrieve(r1.id);
  assert.equal(got.id, r1.id);
  assert.equal(got.output_text, r1.output_text);
});

test('responses, streaming', async () => {
  const stream = await client.responses.create({
    model: MODEL,
    input: 'Write one sentence about the sea.',
    max_output_tokens: 12,
    stream: true,
  });
  const types = [];
  let text = '';
  let completed = null;
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === 'response.output_text.delta') text += event.delta;
    if (event.type === 'response.completed') completed = event.response;
  }
  assert.equal(types[0], 'response.created');
  assert.ok(completed, `no response.completed among ${types.join(', ')}`);
  assert.ok(text.length > 0);
  assert.ok(completed.usage.output_tokens >= 1 && completed.usage.output_tokens <= 12);
});

test('errors come back as the SDK\'s typed errors', async () => {
  await assert.rejects(
    client.responses.retrieve('resp_does_not_exist'),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404,
  );
});

// ---- tool calls (the simulators play tools.yaml, as vLLM with --enable-auto-tool-choice) ----

const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city.',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['city'],
    },
  },
};
const ASK = 'What is the weather in Paris?';

function expectWeatherCall(name, args) {
  assert.equal(name, 'get_weather');
  assert.deepEqual(JSON.parse(args), { city: 'Paris', unit: 'celsius' });
}

test('chat tool call, not streaming, then the tool result answered', async () => {
  const messages = [{ role: 'user', content: ASK }];
  const first = await client.chat.completions.create({ model: MODEL, messages, tools: [WEATHER_TOOL] });
  const choice = first.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.tool_calls.length, 1);
  const call = choice.message.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.ok(call.id, 'the call has an id');
  expectWeatherCall(call.function.name, call.function.arguments);
  assert.ok(first.usage.completion_tokens > 0);
  messages.push(choice.message, { role: 'tool', tool_call_id: call.id, content: 'sunny-21' });
  const second = await client.chat.completions.create({ model: MODEL, messages, tools: [WEATHER_TOOL] });
  assert.equal(second.choices[0].message.content, 'It is sunny in Paris, 21 degrees.');
  assert.equal(second.choices[0].finish_reason, 'stop');
});

test('chat tool call, streaming: the deltas add up to the call', async () => {
  const stream = await client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: ASK }], tools: [WEATHER_TOOL], stream: true,
  });
  const calls = [];
  let finish = null;
  let reasoning = '';
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    if (c.delta?.reasoning) reasoning += c.delta.reasoning;
    for (const d of c.delta?.tool_calls ?? []) {
      calls[d.index] ??= { id: '', name: '', args: '' };
      if (d.id) calls[d.index].id = d.id;
      if (d.function?.name) calls[d.index].name += d.function.name;
      if (d.function?.arguments) calls[d.index].args += d.function.arguments;
    }
    if (c.finish_reason) finish = c.finish_reason;
  }
  assert.equal(finish, 'tool_calls');
  assert.equal(calls.length, 1);
  assert.ok(calls[0].id);
  expectWeatherCall(calls[0].name, calls[0].args);
  assert.ok(reasoning.includes('call get_weather'), `reasoning: ${reasoning}`);
});

test('responses tool call, not streaming, then the function output answered', async () => {
  const tools = [{ type: 'function', name: 'get_weather', parameters: WEATHER_TOOL.function.parameters }];
  const first = await client.responses.create({ model: MODEL, input: ASK, tools, store: false });
  const call = first.output.find((o) => o.type === 'function_call');
  assert.ok(call, `no function_call item: ${JSON.stringify(first.output)}`);
  expectWeatherCall(call.name, call.arguments);
  assert.ok(call.call_id);
  assert.ok(first.output.some((o) => o.type === 'reasoning'), 'a reasoning item comes first');
  // As Codex does: the whole history back, with the call and its output (store: false).
  const second = await client.responses.create({
    model: MODEL, tools, store: false,
    input: [{ role: 'user', content: ASK }, call,
            { type: 'function_call_output', call_id: call.call_id, output: 'sunny-21' }],
  });
  assert.equal(second.output_text, 'It is sunny in Paris, 21 degrees.');
  assert.equal(second.status, 'completed');
});

test('responses tool call, streaming: argument deltas add up to the call', async () => {
  const tools = [{ type: 'function', name: 'get_weather', parameters: WEATHER_TOOL.function.parameters }];
  const stream = await client.responses.create({ model: MODEL, input: ASK, tools, stream: true });
  let args = '';
  let done = null;
  let completed = null;
  for await (const ev of stream) {
    if (ev.type === 'response.function_call_arguments.delta') args += ev.delta;
    if (ev.type === 'response.output_item.done' && ev.item.type === 'function_call') done = ev.item;
    if (ev.type === 'response.completed') completed = ev.response;
  }
  assert.ok(done, 'no function_call item was done');
  expectWeatherCall(done.name, args);
  assert.equal(done.arguments, args);
  assert.ok(completed.output.some((o) => o.type === 'function_call'));
});
