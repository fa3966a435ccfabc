// Drives zoo serve's page (serve/page.html) in headless Chromium over the DevTools protocol
// (--remote-debugging-pipe: fd 3 carries commands, fd 4 replies, each JSON ending in a NUL):
// waits for a completions model's card, types a prompt, sets max_tokens and temperature, clicks
// Generate and waits for the stream to end; the text must equal --expect-file's content, and the
// request the page sent must carry the prompt, max_tokens, temperature and "stream": true.
// Usage: node serve_page_cdp.mjs --url URL --model ID --prompt TEXT --max-tokens N
//          --temperature T --expect-file FILE --screenshot PNG [--chrome PATH] [--timeout S]
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const args = { chrome: "/usr/bin/chromium-headless-shell", timeout: "60" };
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i];
  if (!k.startsWith("--") || i + 1 >= process.argv.length) { console.error(`serve_page_cdp: bad argument ${k}`); process.exit(2); }
  args[k.slice(2).replace(/-/g, "_")] = process.argv[i + 1];
}
for (const k of ["url", "model", "prompt", "max_tokens", "temperature", "expect_file", "screenshot"])
  if (args[k] === undefined) { console.error(`serve_page_cdp: --${k.replace(/_/g, "-")} is required`); process.exit(2); }
const expected = fs.readFileSync(args.expect_file, "utf8");
const id = args.model;

const profile = fs.mkdtempSync(path.join(os.tmpdir(), "serve-page-chrome-"));
const chrome = spawn(args.chrome, ["--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
  "--no-first-run", "--disable-dev-shm-usage", `--user-data-dir=${profile}`, "about:blank"],
  { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"], detached: true });  // its own process group
let chromeLog = "";
chrome.stdio[2].on("data", (d) => { chromeLog = (chromeLog + d).slice(-4000); });
chrome.on("error", (e) => fail(`cannot start ${args.chrome}: ${e.message}`));
chrome.on("exit", (code, signal) => { if (!finished) fail(`the browser exited (${code ?? signal})\n${chromeLog}`); });

let finished = false, nextId = 0, inbox = Buffer.alloc(0);
const pending = new Map(), listeners = [];
chrome.stdio[4].on("data", (chunk) => {
  inbox = Buffer.concat([inbox, chunk]);
  let end;
  while ((end = inbox.indexOf(0)) >= 0) {
    const msg = JSON.parse(inbox.subarray(0, end).toString("utf8"));
    inbox = inbox.subarray(end + 1);
    if (msg.id !== undefined && pending.has(msg.id)) {
      const { resolve, reject, method } = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) reject(new Error(`${method}: ${msg.error.message}`)); else resolve(msg.result);
    } else if (msg.method) for (const l of listeners) l(msg);
  }
});
chrome.stdio[3].on("error", () => {});  // a closed pipe shows up as the browser's exit

function send(method, params = {}, sessionId) {
  const msg = { id: ++nextId, method, params };
  if (sessionId) msg.sessionId = sessionId;
  chrome.stdio[3].write(JSON.stringify(msg) + "\0");
  return new Promise((resolve, reject) => pending.set(msg.id, { resolve, reject, method }));
}

let session = null;
const page = (method, params) => send(method, params, session);
async function evaluate(expression) {
  const r = await page("Runtime.evaluate", { expression, returnByValue: true, awaitPromise: true });
  if (r.exceptionDetails) throw new Error(`page script: ${r.exceptionDetails.exception?.description || r.exceptionDetails.text}`);
  return r.result.value;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function screenshot() {
  if (!session) return;
  try {
    const { data } = await page("Page.captureScreenshot", { format: "png" });
    fs.writeFileSync(args.screenshot, Buffer.from(data, "base64"));
    console.log(`screenshot: ${args.screenshot}`);
  } catch (e) { console.error(`serve_page_cdp: no screenshot: ${e.message}`); }
}

// Ends the browser (Debian's chromium-headless-shell is a shell script that runs the real one:
// closes it, then kills its process group) and its profile directory, then this process.
async function shutdown(code) {
  const exited = chrome.exitCode !== null || chrome.signalCode !== null ? Promise.resolve()
    : new Promise((resolve) => chrome.once("exit", resolve));
  await Promise.race([send("Browser.close").catch(() => {}), sleep(2000)]);
  await Promise.race([exited, sleep(3000)]);
  try { process.kill(-chrome.pid, "SIGKILL"); } catch { /* already gone */ }
  await sleep(200);
  fs.rmSync(profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  process.exit(code);
}

async function fail(message) {
  if (finished) return;
  finished = true;
  console.error(`serve_page_cdp: FAILED: ${message}`);
  await Promise.race([screenshot(), sleep(5000)]);
  await shutdown(1);
}
const deadline = setTimeout(() => fail(`timed out after ${args.timeout} s`), Number(args.timeout) * 1000);

// Polls probe() until it returns a truthy value.
async function until(what, probe) {
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (finished) throw new Error(`stopped waiting for ${what}`);
    await sleep(100);
  }
}

async function typeInto(elementId, text) {
  await evaluate(`(() => { const e = document.getElementById(${JSON.stringify(elementId)}); e.value = ""; e.focus(); })()`);
  await page("Input.insertText", { text });
}

async function main() {
  const { targetId } = await send("Target.createTarget", { url: "about:blank" });
  ({ sessionId: session } = await send("Target.attachToTarget", { targetId, flatten: true }));
  const requests = [];
  listeners.push((m) => {
    if (m.sessionId !== session) return;
    if (m.method === "Runtime.exceptionThrown") console.error(`page exception: ${m.params.exceptionDetails.exception?.description || m.params.exceptionDetails.text}`);
    if (m.method === "Runtime.consoleAPICalled") console.error(`page console.${m.params.type}: ${m.params.args.map((a) => a.value ?? a.description).join(" ")}`);
    if (m.method === "Network.requestWillBeSent") requests.push(m.params.request);
  });
  await Promise.all([page("Page.enable"), page("Runtime.enable"), page("Network.enable")]);
  await page("Emulation.setDeviceMetricsOverride", { width: 1280, height: 900, deviceScaleFactor: 1, mobile: false });
  await page("Page.navigate", { url: args.url });
  const q = JSON.stringify;
  await until(`the card of model ${id}`, () => evaluate(`!!document.getElementById(${q("run-" + id)})`));
  console.log(`ok: the page lists model ${id}`);

  await typeInto("prompt-" + id, args.prompt);
  await typeInto("max_tokens-" + id, args.max_tokens);
  await typeInto("temperature-" + id, args.temperature);
  const box = await evaluate(`(() => { const r = document.getElementById(${q("run-" + id)}).getBoundingClientRect();
                                       return { x: r.x + r.width / 2, y: r.y + r.height / 2 }; })()`);
  for (const type of ["mousePressed", "mouseReleased"])
    await page("Input.dispatchMouseEvent", { type, x: box.x, y: box.y, button: "left", clickCount: 1 });

  let partial = 0;
  const result = await until("the stream to end", async () => {
    const s = await evaluate(`(() => { const o = document.getElementById(${q("out-" + id)});
      return { state: o.dataset.state, text: o.textContent, error: document.getElementById(${q("err-" + id)}).textContent,
               status: document.getElementById(${q("status-" + id)}).textContent }; })()`);
    if (s.state === "running" && s.text) partial++;
    return ["done", "error", "aborted"].includes(s.state) ? s : null;
  });
  if (result.state !== "done") return fail(`the stream ended in state ${result.state}: ${result.error || result.status}`);
  console.log(`ok: the stream ended (${result.status})${partial ? `; partial text seen ${partial} times while streaming` : ""}`);

  const post = requests.find((r) => r.method === "POST" && r.url.endsWith("/v1/completions"));
  if (!post) return fail("the page sent no POST /v1/completions");
  const body = JSON.parse(post.postData ?? "{}");
  const want = { model: id, prompt: args.prompt, max_tokens: Number(args.max_tokens), temperature: Number(args.temperature), stream: true };
  for (const [k, v] of Object.entries(want))
    if (body[k] !== v) return fail(`the request's ${k} is ${JSON.stringify(body[k])}, not ${JSON.stringify(v)}`);
  console.log(`ok: the page sent ${JSON.stringify(body)}`);

  if (result.text !== expected) return fail(`the page shows ${JSON.stringify(result.text)}, not the greedy ${JSON.stringify(expected)}`);
  console.log(`ok: the page shows the greedy continuation ${JSON.stringify(result.text)}`);
  await screenshot();
  finished = true;
  clearTimeout(deadline);
  await shutdown(0);
}

main().catch((e) => fail(e.stack || String(e)));
