// The ONNX Runtime side of tools/bench/infer_bench.sh (issue 64): one forward row (gpt-prefill,
// bert, mt-encoder) of an ONNX file that tools/bench/infer_bench.py export wrote, on the CPU
// build of onnxruntime-node, fp32, intraOpNumThreads = --threads, interOpNumThreads 1, graph
// optimisation "all". Prints one JSON line with the median of --repeat runs after --warmup;
// --out writes the row's outputs as safetensors (what infer_bench.py compare reads).
//
//   node tools/bench/infer_ort.mjs --row ROW --onnx FILE --inputs FILE [--threads N]
//        [--warmup W] [--repeat R] [--out FILE]
//   node tools/bench/infer_ort.mjs --check      (prints the version where the package loads)
//
// onnxruntime-node is loaded from ${ZOO_NPM_CACHE:-~/.cache/zoo/npm} (infer_bench.sh installs it
// there: npm install --ignore-scripts, whose skipped install script only fetches GPU files).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const row = args.row, threads = Number(args.threads ?? 2), warmup = Number(args.warmup ?? 1);
const repeat = Number(args.repeat ?? 3);
const npmDir = process.env.ZOO_NPM_CACHE ?? path.join(os.homedir(), ".cache/zoo/npm");
let ort;
try {
  ort = createRequire(path.join(npmDir, "package.json"))("onnxruntime-node");
} catch (e) {
  console.error(`infer_ort.mjs: cannot load onnxruntime-node from ${npmDir} (npm install --ignore-scripts --prefix ${npmDir} onnxruntime-node): ${e.message}`);
  process.exit(1);
}

if ("check" in args) {  // --check: onnxruntime-node loads
  console.log(`onnxruntime-node ${ort.env.versions?.common ?? ""}`);
  process.exit(0);
}

// safetensors: an 8-byte little-endian header length, the JSON header, the data.
const DTYPES = { F32: [Float32Array, "float32"], I64: [BigInt64Array, "int64"] };
function loadSafetensors(file) {
  const buf = fs.readFileSync(file);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString());
  const out = {};
  for (const [name, info] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    const [Arr, type] = DTYPES[info.dtype] ?? [];
    if (!Arr) continue;
    const [b, e] = info.data_offsets;
    const bytes = buf.subarray(8 + n + b, 8 + n + e);
    const data = new Arr(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
    out[name] = { data, type, dims: info.shape };
  }
  return out;
}
function saveSafetensors(file, tensors) {
  const header = {}, blobs = [];
  let offset = 0;
  for (const [name, t] of Object.entries(tensors)) {
    const bytes = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    header[name] = { dtype: "F32", shape: t.dims, data_offsets: [offset, offset + bytes.length] };
    blobs.push(bytes);
    offset += bytes.length;
  }
  let h = JSON.stringify(header);
  h += " ".repeat((8 - ((8 + h.length) % 8)) % 8);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(h.length));
  fs.writeFileSync(file, Buffer.concat([len, Buffer.from(h), ...blobs]));
}

const inputs = loadSafetensors(args.inputs);
const tensor = (t) => new ort.Tensor(t.type, t.data, t.dims);
let feeds;  // one feed per run of the session
if (row === "gpt-prefill") {
  feeds = [{ input_ids: tensor(inputs.input_ids) }];
} else if (row === "bert") {
  const ids = inputs.input_ids;
  feeds = [{ input_ids: tensor(ids), token_type_ids: new ort.Tensor("int64", new BigInt64Array(ids.data.length), ids.dims),
             attention_mask: tensor(inputs.attention_mask) }];
} else if (row === "mt-encoder") {
  const n = Number(inputs.batches.data[0]);
  feeds = Array.from({ length: n }, (_, i) => ({ input_ids: tensor(inputs[`src_${i}`]) }));
} else {
  console.error(`infer_ort.mjs: no ONNX row ${row}`);
  process.exit(2);
}

const session = await ort.InferenceSession.create(args.onnx, {
  executionProviders: ["cpu"], intraOpNumThreads: threads, interOpNumThreads: 1,
  graphOptimizationLevel: "all", executionMode: "sequential",
});
const outName = session.outputNames[0];
const times = [];
let results;
for (let i = 0; i < warmup + repeat; ++i) {
  const t0 = process.hrtime.bigint();
  results = [];
  for (const f of feeds) results.push((await session.run(f))[outName]);
  if (i >= warmup) times.push(Number(process.hrtime.bigint() - t0) / 1e6);
}
if (args.out) {
  let out;
  if (row === "gpt-prefill") {  // the logits at the positions the equality check reads
    const r = results[0], [b, t, v] = r.dims, pos = Array.from(inputs.positions.data, Number);
    const data = new Float32Array(b * pos.length * v);
    for (let i = 0; i < b; ++i)
      pos.forEach((p, j) => data.set(r.data.subarray((i * t + p) * v, (i * t + p + 1) * v), (i * pos.length + j) * v));
    out = { data, dims: [b, pos.length, v] };
  } else if (row === "bert") {
    out = { data: results[0].data, dims: results[0].dims };
  } else {  // every batch's states, flattened and concatenated, as the other sides write them
    const total = results.reduce((s, r) => s + r.data.length, 0), data = new Float32Array(total);
    let at = 0;
    for (const r of results) { data.set(r.data, at); at += r.data.length; }
    out = { data, dims: [total] };
  }
  saveSafetensors(args.out, { logits: out });
}
times.sort((a, b) => a - b);
console.log(JSON.stringify({ impl: "onnxruntime", version: ort.env.versions?.common ?? "", row, threads,
                             median_ms: times[Math.floor(times.length / 2)], runs: times.length }));
