#!/usr/bin/env node
// Drives a running `zoo serve` with concurrent clients and prints a summary (Node 20, no packages).
import http from "node:http";
import fs from "node:fs";
import { performance } from "node:perf_hooks";

const HELP = `usage: node tools/bench/serve_load.mjs --url http://127.0.0.1:PORT --model ID [options]

Sends --requests requests from --clients concurrent clients to a zoo serve on this machine
(loopback only) and prints requests, errors, throughput and latency.

  --url URL             the server (http, host 127.0.0.1, localhost or ::1)
  --model ID            the model to call
  --endpoint E          completions (default) or translate
  --clients N           concurrent clients, 1..256 (default 8)
  --requests M          total requests, 1..100000 (default 100)
  --max-time S          stop sending after S seconds, 1..86400 (default 600)
  --timeout S           one request's limit in seconds (default 300)
  --max-tokens N        completions: max_tokens (default 64)
  --temperature T       completions: temperature (default 0: greedy)
  --stream              completions: stream, and measure the time to the first token
  --prompts FILE        one prompt (or sentence) per line, used round robin
  --batch B             translate: sentences per request (default 1)
  --expect FILE         JSON lines {"prompt": P, "text": T} (or "completion": T, as zoo generate
                        --prompts prints): a reply to prompt P must be exactly T
  --malformed-every K   soak: every K-th request is malformed, rotating through bad_json,
                        wrong_type_text, wrong_type_limit, negative_limit, huge_limit (1e12),
                        huge_body (10 MB), unknown_model, disconnect. Expected: a 4xx with an
                        OpenAI error body; huge_limit may also be a 200; disconnect has none.
                        A 5xx, a failed connection or another reply is an error.
  --rss-pid PID         sample VmRSS of PID after the warm-up (10% of the requests, at least 50)
                        and at the end
  --api-key KEY         send Authorization: Bearer KEY (default: $ZOO_API_KEY)
  --json FILE           also write the summary as JSON
  --help                this text

Exit status: 0, or 1 when a valid request failed or mismatched, or a malformed one got an
error; 2 on bad arguments.`;

function fail(msg) { console.error(`serve_load: ${msg}`); process.exit(2); }

function parseArgs(argv) {
  const o = { endpoint: "completions", clients: 8, requests: 100, maxTime: 600, timeout: 300, maxTokens: 64,
              temperature: 0, stream: false, batch: 1, malformedEvery: 0, apiKey: process.env.ZOO_API_KEY || "" };
  const flags = { "--stream": "stream" };
  const values = { "--url": "url", "--model": "model", "--endpoint": "endpoint", "--clients": "clients",
    "--requests": "requests", "--max-time": "maxTime", "--timeout": "timeout", "--max-tokens": "maxTokens",
    "--temperature": "temperature", "--prompts": "prompts", "--batch": "batch", "--expect": "expect",
    "--malformed-every": "malformedEvery", "--rss-pid": "rssPid", "--api-key": "apiKey", "--json": "json" };
  const numeric = { clients: [1, 256, true], requests: [1, 100000, true], maxTime: [1, 86400], timeout: [1, 86400],
    maxTokens: [1, 1e9, true], temperature: [0, 100], batch: [1, 4096, true], malformedEvery: [1, 1e9, true],
    rssPid: [1, 1e9, true] };
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i], v;
    if (a === "--help" || a === "-h") { console.log(HELP); process.exit(0); }
    const eq = a.indexOf("=");
    if (a.startsWith("--") && eq > 0) { v = a.slice(eq + 1); a = a.slice(0, eq); }
    if (flags[a]) { o[flags[a]] = true; continue; }
    if (!values[a]) fail(`unknown option ${a} (see --help)`);
    if (v === undefined) { if (i + 1 >= argv.length) fail(`${a} needs a value`); v = argv[++i]; }
    const key = values[a];
    if (numeric[key]) {
      const [lo, hi, int] = numeric[key], n = Number(v);
      if (!Number.isFinite(n) || n < lo || n > hi || (int && !Number.isInteger(n))) fail(`${a} ${v}: want ${int ? "an integer" : "a number"} in [${lo}, ${hi}]`);
      o[key] = n;
    } else o[key] = v;
  }
  if (!o.url) fail("--url is required");
  if (!o.model) fail("--model is required");
  let u;
  try { u = new URL(o.url); } catch { fail(`--url ${o.url}: not a URL`); }
  if (u.protocol !== "http:") fail(`--url ${o.url}: only http`);
  if (!["127.0.0.1", "localhost", "[::1]", "::1"].includes(u.hostname)) fail(`--url ${o.url}: loopback hosts only (127.0.0.1, localhost, ::1)`);
  o.host = u.hostname.replace(/^\[|\]$/g, ""); o.port = Number(u.port || 80);
  if (!["completions", "translate"].includes(o.endpoint)) fail(`--endpoint ${o.endpoint}: completions or translate`);
  if (o.stream && o.endpoint !== "completions") fail("--stream is for --endpoint completions");
  return o;
}

const opt = parseArgs(process.argv.slice(2));
const prompts = opt.prompts ? fs.readFileSync(opt.prompts, "utf8").split(/\r?\n/).filter((l) => l.trim() !== "")
  : opt.endpoint === "translate" ? ["我们走吧。", "今天天气很好。", "你叫什么名字？", "我喜欢读书。"]
  : ["The", "Once upon a time", "First Citizen:", "ab", "To be or not"];
if (!prompts.length) fail(`--prompts ${opt.prompts}: no lines`);
const expected = new Map();
if (opt.expect) {
  fs.readFileSync(opt.expect, "utf8").split(/\r?\n/).forEach((line, i) => {
    if (!line.trim()) return;
    let j; try { j = JSON.parse(line); } catch { fail(`--expect ${opt.expect}:${i + 1}: not JSON`); }
    const text = j.text ?? j.completion;
    if (typeof j.prompt !== "string" || typeof text !== "string") fail(`--expect ${opt.expect}:${i + 1}: want {"prompt", "text"}`);
    expected.set(j.prompt, text);
  });
  if (opt.temperature !== 0) console.error("serve_load: warning: --expect with --temperature > 0 will mismatch");
}

const path = `/v1/${opt.endpoint}`;
const field = opt.endpoint === "completions" ? { text: "prompt", limit: "max_tokens" } : { text: "input", limit: "max_length" };
const agent = new http.Agent({ keepAlive: true, maxSockets: opt.clients });

// One HTTP request. Resolves {status, body, events, done, ttft, ms} or {error}; never rejects.
// drop: close the connection after the first chunk of the reply, or, when the reply is not a
// stream, 20 ms after the request is sent (a client that goes away while its request runs).
function send(body, { drop = false, fresh = false } = {}) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const buf = Buffer.isBuffer(body) ? body : Buffer.from(body);
    const headers = { "Content-Type": "application/json", "Content-Length": buf.length };
    if (opt.apiKey) headers.Authorization = `Bearer ${opt.apiKey}`;
    let settled = false;
    const finish = (r) => { if (!settled) { settled = true; clearTimeout(timer); resolve({ ms: performance.now() - t0, ...r }); } };
    const req = http.request({ host: opt.host, port: opt.port, method: "POST", path, headers,
                               agent: fresh || drop ? false : agent });
    const timer = setTimeout(() => { finish({ error: "timeout" }); req.destroy(); }, opt.timeout * 1000);
    req.on("error", (e) => finish({ error: "connection", detail: e.code || e.message }));
    if (drop && opt.endpoint === "translate")
      req.on("finish", () => setTimeout(() => { finish({ dropped: true }); req.destroy(); }, 20));
    req.on("response", (res) => {
      const isStream = res.statusCode === 200 && /text\/event-stream/.test(res.headers["content-type"] || "");
      let text = "", events = [], pending = "", done = false, ttft = null;
      res.setEncoding("utf8");
      res.on("data", (chunk) => {
        if (drop && isStream) { finish({ status: res.statusCode, dropped: true }); req.destroy(); return; }
        if (!isStream) { text += chunk; return; }
        pending = (pending + chunk).replace(/\r\n/g, "\n");
        let k;
        while ((k = pending.indexOf("\n\n")) >= 0) {          // one server-sent event per blank line
          const data = pending.slice(0, k).split("\n").filter((l) => l.startsWith("data:"))
            .map((l) => l.slice(5).replace(/^ /, "")).join("\n");
          pending = pending.slice(k + 2);
          if (!data) continue;
          if (data === "[DONE]") { done = true; continue; }
          try {
            const ev = JSON.parse(data);
            events.push(ev);
            if (ttft === null && ev.choices?.[0]?.text) ttft = performance.now() - t0;
          } catch { events.push({ unparsable: data }); }
        }
      });
      res.on("end", () => finish({ status: res.statusCode, body: text, stream: isStream, events, done, ttft }));
      res.on("error", (e) => finish({ error: "connection", detail: e.code || e.message }));
    });
    req.end(buf);
  });
}

// The checks of an error reply: a JSON body {"error": {"message", "type", "param", "code"}}.
function isErrorBody(text) {
  try {
    const e = JSON.parse(text).error;
    return !!e && typeof e.message === "string" && typeof e.type === "string" && "param" in e && "code" in e;
  } catch { return false; }
}

const stats = { sent: 0, ok: 0, errors: {}, latencies: [], ttfts: [], tokens: 0, sentences: 0, checked: 0,
                mismatches: 0, firstMismatches: [], firstErrors: [], malformed: {}, malformedErrors: 0 };
const bump = (obj, key) => { obj[key] = (obj[key] || 0) + 1; };

function validBody(i) {
  if (opt.endpoint === "completions") {
    const prompt = prompts[i % prompts.length];
    const body = { model: opt.model, prompt, max_tokens: opt.maxTokens, temperature: opt.temperature, stream: opt.stream };
    if (opt.stream) body.stream_options = { include_usage: true };
    return { inputs: [prompt], body };
  }
  const inputs = Array.from({ length: opt.batch }, (_, k) => prompts[(i * opt.batch + k) % prompts.length]);
  return { inputs, body: { model: opt.model, input: inputs } };
}

async function runValid(i) {
  const { inputs, body } = validBody(i);
  const r = await send(JSON.stringify(body));
  const failed = (kind, detail) => {
    bump(stats.errors, kind);
    if (stats.firstErrors.length < 5) stats.firstErrors.push({ kind, detail: String(detail ?? "").slice(0, 300) });
  };
  if (r.error) return failed(r.error, r.detail);
  if (r.status !== 200) return failed(String(r.status), r.body);
  let texts, tokens = 0;
  try {
    if (opt.stream) {
      if (!r.stream) throw new Error("not text/event-stream");
      if (!r.done) throw new Error("the stream ended without data: [DONE]");
      if (r.events.some((e) => e.unparsable || e.error)) throw new Error("an error or unparsable event in the stream");
      texts = [r.events.map((e) => e.choices?.[0]?.text ?? "").join("")];
      const usage = r.events.findLast((e) => e.usage)?.usage;
      tokens = usage ? usage.completion_tokens : r.events.filter((e) => e.choices?.[0]?.text).length;
    } else {
      const j = JSON.parse(r.body);
      const items = opt.endpoint === "completions" ? j.choices : j.data;
      if (!Array.isArray(items) || items.length !== inputs.length) throw new Error(`want ${inputs.length} results`);
      texts = items.map((c) => c.text);
      if (texts.some((t) => typeof t !== "string")) throw new Error("a result without text");
      tokens = j.usage?.completion_tokens ?? 0;
    }
  } catch (e) { return failed("bad_response", `${e.message}: ${(r.body || "").slice(0, 200)}`); }
  stats.ok++;
  stats.tokens += tokens;
  stats.sentences += inputs.length;
  stats.latencies.push(r.ms);
  if (r.ttft !== null && r.ttft !== undefined) stats.ttfts.push(r.ttft);
  inputs.forEach((p, k) => {
    if (!expected.has(p)) return;
    stats.checked++;
    if (expected.get(p) === texts[k]) return;
    stats.mismatches++;
    if (stats.firstMismatches.length < 5) stats.firstMismatches.push({ prompt: p, expected: expected.get(p), got: texts[k] });
  });
}

const KINDS = ["bad_json", "wrong_type_text", "wrong_type_limit", "negative_limit", "huge_limit", "huge_body",
               "unknown_model", "disconnect"];
let hugeText = null;

function malformedRequest(kind, i) {
  const good = validBody(i).body;
  const wrap = (v) => (opt.endpoint === "translate" ? [v] : v);
  switch (kind) {
    case "bad_json": return JSON.stringify(good).slice(0, -7) + ',"x":}';
    case "wrong_type_text": return JSON.stringify({ ...good, [field.text]: 5 });
    case "wrong_type_limit": return JSON.stringify({ ...good, [field.limit]: "x" });
    case "negative_limit": return JSON.stringify({ ...good, [field.limit]: -5 });
    case "huge_limit": return JSON.stringify({ ...good, [field.limit]: 1e12 });
    case "huge_body":
      hugeText ??= Buffer.from(JSON.stringify({ ...good, [field.text]: wrap("a".repeat(10 << 20)) }));
      return hugeText;
    case "unknown_model": return JSON.stringify({ ...good, model: "no-such-model-serve-load" });
    case "disconnect": return JSON.stringify(opt.endpoint === "completions" ? { ...good, stream: true } : good);
  }
}

async function runMalformed(kind, i) {
  const r = await send(malformedRequest(kind, i), { drop: kind === "disconnect", fresh: kind === "huge_body" });
  const outcome = r.error ? r.error : r.dropped ? "disconnected" : String(r.status);
  stats.malformed[kind] ??= {};
  bump(stats.malformed[kind], outcome);
  let good;
  if (r.error) good = false;
  else if (r.dropped) good = true;
  else if (r.status >= 400 && r.status < 500) good = isErrorBody(r.body);
  else if (r.status === 200) good = kind === "huge_limit";
  else good = false;
  if (!good) {
    stats.malformedErrors++;
    if (stats.firstErrors.length < 5) stats.firstErrors.push({ kind: `malformed ${kind}: ${outcome}`, detail: String(r.detail ?? r.body ?? "").slice(0, 300) });
  }
}

function rssKiB(pid) {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : null;
  } catch { return null; }
}

const pct = (xs, p) => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};

async function main() {
  const t0 = performance.now(), deadline = t0 + opt.maxTime * 1000;
  const warmup = Math.min(opt.requests, Math.max(50, Math.ceil(opt.requests * 0.1)));
  let next = 0, finished = 0, malformedCount = 0, rssWarm = null, stoppedByTime = false;
  async function client() {
    for (;;) {
      if (next >= opt.requests) return;
      if (performance.now() >= deadline) { stoppedByTime = true; return; }
      const i = next++;
      stats.sent++;
      if (opt.malformedEvery && (i + 1) % opt.malformedEvery === 0) await runMalformed(KINDS[malformedCount++ % KINDS.length], i);
      else await runValid(i);
      if (++finished === warmup && opt.rssPid && finished < opt.requests) rssWarm = rssKiB(opt.rssPid);
    }
  }
  await Promise.all(Array.from({ length: opt.clients }, client));
  const wall = (performance.now() - t0) / 1000;
  agent.destroy();
  const rssEnd = opt.rssPid ? rssKiB(opt.rssPid) : null;
  const failedValid = Object.values(stats.errors).reduce((a, b) => a + b, 0);
  const round = (x, d = 1) => (x === null ? null : Number(x.toFixed(d)));
  const summary = {
    url: opt.url, model: opt.model, endpoint: opt.endpoint, clients: opt.clients, stream: opt.stream,
    requests: { planned: opt.requests, sent: stats.sent, malformed: malformedCount, ok: stats.ok, errors: stats.errors, stopped_by_max_time: stoppedByTime },
    wall_s: round(wall, 3),
    completion_tokens: stats.tokens, completion_tokens_per_s: round(stats.tokens / wall),
    ...(opt.endpoint === "translate" ? { sentences: stats.sentences, sentences_per_s: round(stats.sentences / wall, 2) } : {}),
    latency_ms: { p50: round(pct(stats.latencies, 50)), p99: round(pct(stats.latencies, 99)) },
    ...(opt.stream ? { ttft_ms: { p50: round(pct(stats.ttfts, 50)), p99: round(pct(stats.ttfts, 99)) } } : {}),
    ...(opt.expect ? { expect: { checked: stats.checked, mismatches: stats.mismatches, first: stats.firstMismatches } } : {}),
    ...(opt.malformedEvery ? { malformed: { every: opt.malformedEvery, outcomes: stats.malformed, errors: stats.malformedErrors } } : {}),
    ...(opt.rssPid ? { rss_kib: { after_warmup: rssWarm, end: rssEnd,
        growth_pct: rssWarm && rssEnd ? round((100 * (rssEnd - rssWarm)) / rssWarm, 2) : null } } : {}),
    first_errors: stats.firstErrors,
  };
  const ms = (x) => (x === null ? "n/a" : `${x} ms`);
  const s = summary, lines = [
    `serve_load: ${s.endpoint} on ${s.url} model ${s.model}, ${s.clients} clients${s.stream ? ", streaming" : ""}`,
    `requests   sent ${s.requests.sent}/${s.requests.planned}` + (opt.malformedEvery ? ` (${malformedCount} malformed)` : "") +
      `, ok ${s.requests.ok}, failed ${failedValid}` +
      (failedValid ? ` (${Object.entries(s.requests.errors).map(([k, v]) => `${k}: ${v}`).join(", ")})` : "") +
      (stoppedByTime ? `; stopped at --max-time ${opt.maxTime} s` : ""),
    `wall       ${s.wall_s} s`,
    `throughput ${s.completion_tokens_per_s} completion tokens/s (${s.completion_tokens} tokens)` +
      (opt.endpoint === "translate" ? `, ${s.sentences_per_s} sentences/s` : ""),
    `latency    p50 ${ms(s.latency_ms.p50)}, p99 ${ms(s.latency_ms.p99)}`,
  ];
  if (opt.stream) lines.push(`ttft       p50 ${ms(s.ttft_ms.p50)}, p99 ${ms(s.ttft_ms.p99)}`);
  if (opt.expect) {
    lines.push(`expect     ${stats.checked} checked, ${stats.mismatches} mismatched`);
    for (const m of stats.firstMismatches) lines.push(`  prompt ${JSON.stringify(m.prompt)}\n    expected ${JSON.stringify(m.expected)}\n    got      ${JSON.stringify(m.got)}`);
  }
  if (opt.malformedEvery) {
    lines.push(`malformed  1 request in ${opt.malformedEvery}, ${stats.malformedErrors} wrong outcomes`);
    for (const [k, v] of Object.entries(stats.malformed)) lines.push(`  ${k.padEnd(17)} ${Object.entries(v).map(([o, n]) => `${o}: ${n}`).join(", ")}`);
  }
  if (opt.rssPid) lines.push(`rss        after warm-up ${rssWarm ?? "n/a"} KiB, end ${rssEnd ?? "n/a"} KiB, growth ${s.rss_kib.growth_pct ?? "n/a"}%`);
  for (const e of stats.firstErrors) lines.push(`  error ${e.kind}: ${e.detail}`);
  console.log(lines.join("\n"));
  if (opt.json) fs.writeFileSync(opt.json, JSON.stringify(summary, null, 2) + "\n");
  process.exit(failedValid || stats.mismatches || stats.malformedErrors ? 1 : 0);
}

main().catch((e) => { console.error(`serve_load: ${e.stack || e}`); process.exit(1); });
