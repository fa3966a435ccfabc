// OpenAI's official Node client (openai v4) against zoo serve, only its baseURL changed.
// Run by serve_openai_test.sh: prints "ok: ..." per check, exits 1 with a message at the first failure.
// Usage: node serve_openai_client.mjs --npm-dir DIR --url http://127.0.0.1:PORT --api-key KEY
//          --model NAME --prompt TEXT --expect-file FILE   (FILE: the greedy continuation of TEXT)
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({
  options: Object.fromEntries(["npm-dir", "url", "api-key", "model", "prompt", "expect-file"]
    .map((k) => [k, { type: "string" }])),
});
const OpenAI = createRequire(join(args["npm-dir"], "package.json"))("openai");
const expected = readFileSync(args["expect-file"], "utf8");
const { model, prompt } = args;
// maxRetries 0: a failed request must fail the test, not be retried into passing.
const client = new OpenAI({ baseURL: args.url + "/v1", apiKey: args["api-key"], maxRetries: 0, timeout: 60000 });

const show = (x) => JSON.stringify(x);
function check(cond, what, got) {
  if (!cond) throw new Error(`${what}${got === undefined ? "" : `; got ${show(got)}`}`);
}
// The call must throw an instance of errorClass with this status; returns the error.
async function expectError(call, errorClass, status, what) {
  try {
    const r = await call();
    throw new Error(`${what}: expected ${errorClass.name}, but the call succeeded: ${show(r)}`);
  } catch (e) {
    if (!(e instanceof errorClass) || e.status !== status) {
      throw new Error(`${what}: expected ${errorClass.name} (${status}), got ${e?.constructor?.name} ` +
                      `(${e?.status}): ${e?.message}`);
    }
    return e;
  }
}
const greedy = { model, prompt, max_tokens: 16, temperature: 0 };

async function main() {
  const models = [];
  for await (const m of client.models.list()) models.push(m.id);
  check(models.includes(model), `models.list() has no ${show(model)}`, models);
  console.log(`ok: models.list() lists ${show(model)}`);

  const r = await client.completions.create(greedy);
  check(r.object === "text_completion", "completion's object is not text_completion", r.object);
  check(r.choices.length === 1, "one prompt must give one choice", r.choices);
  const c = r.choices[0];
  check(c.text === expected, `greedy text differs from zoo generate's ${show(expected)}`, c.text);
  check(c.finish_reason === "length" || c.finish_reason === "stop", "finish_reason", c.finish_reason);
  check(r.usage && r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 16,
        "usage.completion_tokens not in 1..16", r.usage);
  check(r.usage.prompt_tokens === prompt.length, `usage.prompt_tokens is not ${prompt.length}`, r.usage);
  check(r.usage.total_tokens === r.usage.prompt_tokens + r.usage.completion_tokens, "usage.total_tokens", r.usage);
  console.log(`ok: completions.create greedy gives ${show(c.text)} (finish_reason ${c.finish_reason}, ` +
              `usage ${show(r.usage)})`);

  const stream = await client.completions.create({ ...greedy, stream: true,
                                                   stream_options: { include_usage: true } });
  let text = "", chunks = 0, usage = null, finish = null;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.choices.length) {
      text += chunk.choices[0].text ?? "";
      finish = chunk.choices[0].finish_reason ?? finish;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  check(text === expected, `streamed text differs from ${show(expected)}`, text);
  check(finish === "length" || finish === "stop", "streamed finish_reason", finish);
  check(usage && usage.prompt_tokens === prompt.length && usage.completion_tokens <= 16,
        "stream_options.include_usage: no or wrong usage chunk", usage);
  console.log(`ok: stream: true gives the same text in ${chunks} chunks (usage ${show(usage)})`);

  const two = await client.completions.create({ ...greedy, prompt: [prompt, "ba"] });
  check(two.choices.length === 2, "a list of two prompts must give two choices", two.choices);
  const byIndex = [...two.choices].sort((a, b) => a.index - b.index);
  check(byIndex[0].index === 0 && byIndex[1].index === 1, "choice indexes are not 0 and 1", two.choices);
  check(byIndex[0].text === expected, "prompt list: choice 0 is not the greedy text", byIndex[0].text);
  console.log(`ok: a list of two prompts gives choices 0 and 1 (${show(byIndex.map((x) => x.text))})`);

  const n2 = await client.completions.create({ model, prompt, max_tokens: 8, temperature: 1, n: 2, seed: 5 });
  check(n2.choices.length === 2, "n: 2 must give two choices", n2.choices);
  check(new Set(n2.choices.map((x) => x.index)).size === 2, "n: 2 choices need distinct indexes", n2.choices);
  console.log(`ok: n: 2 with seed gives 2 choices (${show(n2.choices.map((x) => x.text))})`);

  const all = await Promise.all(Array.from({ length: 8 }, () => client.completions.create(greedy)));
  all.forEach((x, i) => check(x.choices[0].text === expected, `concurrent request ${i}: not the greedy text`,
                              x.choices[0].text));
  console.log("ok: 8 concurrent greedy requests all give the same text");

  const nf = await expectError(() => client.completions.create({ ...greedy, model: "no-such-model" }),
                               OpenAI.NotFoundError, 404, "unknown model");
  check(nf.code === "model_not_found", "unknown model: error.code is not model_not_found", nf.error);
  console.log(`ok: an unknown model throws NotFoundError (404): ${nf.message}`);

  const wrong = new OpenAI({ baseURL: args.url + "/v1", apiKey: "wrong", maxRetries: 0, timeout: 60000 });
  const au = await expectError(() => wrong.completions.create(greedy), OpenAI.AuthenticationError, 401, "wrong key");
  await expectError(() => wrong.models.list(), OpenAI.AuthenticationError, 401, "wrong key, models.list()");
  console.log(`ok: a wrong API key throws AuthenticationError (401): ${au.message}`);

  const bad = await expectError(() => client.completions.create({ ...greedy, max_tokens: -1 }),
                                OpenAI.BadRequestError, 400, "max_tokens: -1");
  check(bad.param === "max_tokens", "max_tokens: -1: error.param is not max_tokens", bad.error);
  console.log(`ok: max_tokens: -1 throws BadRequestError (400) with param max_tokens: ${bad.message}`);
}

main().catch((e) => { console.log(`FAILED: ${e.message}`); process.exit(1); });
