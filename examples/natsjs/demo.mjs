// A wacpd client in JavaScript, over the stock nats.js client: it uses
// nothing but the wire contract (docs/api.md), to show it works from
// outside Go. It connects as the coordinator and as a worker agent, reads
// the coordinator's signals from a durable consumer, and checks that the
// worker's checkpoint is in the signed trail with an inclusion proof and
// the tree head's signature, verified here, not trusted.
//
//   WACP_URL=nats://127.0.0.1:4222 WACP_TOKEN="$(cat DATA/admin.token)" node demo.mjs
//
// It prints what it does and exits 0 when every check held.

import crypto from "node:crypto";
import { connect, JSONCodec } from "nats";
import { blake3 } from "@noble/hashes/blake3";

const url = process.env.WACP_URL;
const adminToken = (process.env.WACP_TOKEN || "").trim();
if (!url || !adminToken) {
  console.error("set WACP_URL and WACP_TOKEN (the coordinator's token, DATA/admin.token)");
  process.exit(2);
}
const jc = JSONCodec();

// call sends a request and returns the decoded reply; an error reply
// (header Nats-Service-Error: <code>) is thrown with its code.
async function call(nc, subject, body = {}) {
  const m = await nc.request(subject, jc.encode(body), { timeout: 15000 });
  const code = m.headers?.get("Nats-Service-Error");
  if (code) {
    const err = new Error(`${subject}: ${code}: ${new TextDecoder().decode(m.data)}`);
    err.code = code;
    throw err;
  }
  return jc.decode(m.data);
}

function check(ok, what) {
  if (!ok) throw new Error(`check failed: ${what}`);
  console.log(`  ok: ${what}`);
}

const hex = (b) => Buffer.from(b).toString("hex");
const hashBytes = (h) => {
  if (!/^blake3:[0-9a-f]{64}$/.test(h)) throw new Error(`not a blake3 hash: ${h}`);
  return Buffer.from(h.slice(7), "hex");
};

// The trail's Merkle tree is RFC 9162's with BLAKE3-256: a leaf is
// BLAKE3(0x00 || the entry_hash's 32 bytes), a node BLAKE3(0x01 || l || r)
// (docs/audit.md).
const leafHash = (entryHash) => blake3(Buffer.concat([Buffer.from([0]), hashBytes(entryHash)]));
const nodeHash = (l, r) => blake3(Buffer.concat([Buffer.from([1]), l, r]));

// verifyInclusion is RFC 9162 §2.1.3.2.
function verifyInclusion(entryHash, index, size, proof, root) {
  if (index >= size) return false;
  let fn = index, sn = size - 1, r = leafHash(entryHash);
  for (const p of proof.map(hashBytes)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      while (fn % 2 === 0 && fn !== 0) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2); sn = Math.floor(sn / 2);
  }
  return sn === 0 && hex(r) === hex(hashBytes(root));
}

// verifyNote checks a signed note (golang.org/x/mod/sumdb/note) with a
// verifier key "<name>+<hash>+<base64(0x01 || Ed25519 public key)>" and
// returns its text.
function verifyNote(msg, vkey) {
  // The key data is base64 and may itself hold "+": split at the first two.
  const i = vkey.indexOf("+"), j = vkey.indexOf("+", i + 1);
  const [name, keyHash, keyData] = [vkey.slice(0, i), vkey.slice(i + 1, j), vkey.slice(j + 1)];
  const kd = Buffer.from(keyData, "base64");
  if (kd.length !== 33 || kd[0] !== 1) throw new Error("not an Ed25519 note key");
  const pub = crypto.createPublicKey({
    key: Buffer.concat([Buffer.from("302a300506032b6570032100", "hex"), kd.subarray(1)]), format: "der", type: "spki",
  });
  const split = msg.lastIndexOf("\n\n");
  const text = msg.slice(0, split + 1);
  for (const line of msg.slice(split + 2).split("\n")) {
    const m = /^\u2014 (\S+) (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const sig = Buffer.from(m[2], "base64");
    if (sig.subarray(0, 4).toString("hex") !== keyHash) continue;
    if (crypto.verify(null, Buffer.from(text), pub, sig.subarray(4))) return text;
  }
  throw new Error("the note has no valid signature by " + name);
}

const coord = await connect({ servers: url, token: adminToken, name: "natsjs-coordinator" });
try {
  console.log("coordinator: system.info");
  const info = await call(coord, "wacp.v1.system.info");
  const root = info.root_workspace;
  check(/^[0-9A-Z]{26}$/.test(root), `root workspace ${root}`);

  console.log("coordinator: a durable consumer of its signals (signals.consumer), then workspace.create");
  const cons = await call(coord, `wacp.v1.agent.${root}.signals.consumer`, { durable: "natsjs-demo" });
  check(cons.stream === "WACP_SIGNALS" && cons.durable === true, `durable consumer ${cons.consumer} on ${cons.filter}`);
  const created = await call(coord, `wacp.v1.agent.${root}.workspace.create`, { role: "worker", owner: "natsjs" });
  const ws = created.workspace.id;
  check(created.workspace.state === "idle" && created.token, `worker ${ws} created, idle, with its token`);
  await call(coord, `wacp.v1.agent.${root}.envelope`, {
    to: ws, type: "directive", payload: { format: "markdown", content: "write one checkpoint" },
  });

  console.log("worker: connects with its own token and writes a checkpoint");
  const agent = await connect({ servers: url, token: created.token, name: "natsjs-worker" });
  let cp;
  try {
    const next = await call(agent, `wacp.v1.agent.${ws}.inbox.next`, { wait: "5s" });
    check(next.type === "directive" && next.delivery, `the worker received the directive ${next.id}`);
    await call(agent, `wacp.v1.agent.${ws}.inbox.ack`, { id: next.id });
    cp = await call(agent, `wacp.v1.agent.${ws}.checkpoint`, {
      type: "artifact", intent: "show the contract from nats.js", status: "provisional", confidence: "high",
      payload: { files_changed: ["demo.mjs"], content: "written by nats.js", artifacts: [] },
    });
    check(cp.workspace === ws && /^blake3:/.test(cp.digest), `checkpoint ${cp.id}, digest ${cp.digest}`);
  } finally {
    await agent.close();
  }

  console.log("coordinator: reads the checkpoint signal from its durable consumer");
  const js = coord.jetstream();
  const consumer = await js.consumers.get("WACP_SIGNALS", cons.consumer);
  let sig;
  for (;;) {
    const m = await consumer.next({ expires: 10000 });
    if (!m) throw new Error("no checkpoint signal within 10s");
    const s = jc.decode(m.data);
    m.ack();
    if (s.type === "checkpoint" && s.ref === cp.id) { sig = s; break; }
  }
  check(sig.from === ws && sig.delivered_to === root, `signal checkpoint from ${sig.from} ref ${sig.ref}`);

  console.log("coordinator: proves the checkpoint is in the signed trail");
  const page = await call(coord, "wacp.v1.audit.trail.read", { event_type: "checkpoint_created", workspace: ws });
  const entry = page.entries.find((e) => e.body.checkpoint_id === cp.id);
  check(entry && entry.body.digest === cp.digest, `entry ${entry?.id} pins the checkpoint's digest`);
  const deadline = Date.now() + 10000;
  let sth, proof;
  for (;;) {
    sth = await call(coord, "wacp.v1.audit.sth");
    try {
      proof = await call(coord, "wacp.v1.audit.proof.inclusion", { entry: entry.id, size: sth.size });
      break;
    } catch (e) {
      // The tree head covering a new entry is signed within about a second.
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  check(sth.public_key === info.public_key, "audit.sth names the key system.info publishes");
  const text = verifyNote(sth.note, info.public_key);
  const [origin, size, rootB64, timestamp] = text.split("\n");
  check(origin === sth.origin && Number(size) === sth.size && timestamp === sth.timestamp &&
    Buffer.from(rootB64, "base64").toString("hex") === sth.root.slice(7), `tree head ${sth.size} signed by ${info.public_key.split("+")[0]}`);
  check(proof.entry === entry.id && proof.size === sth.size, `proof for entry ${entry.id} (leaf ${proof.index}) in size ${proof.size}`);
  check(verifyInclusion(entry.integrity.entry_hash, proof.index, sth.size, proof.proof, sth.root),
    `inclusion proof (${proof.proof.length} hashes) verifies against the signed root ${sth.root}`);
  // The checks can fail: a changed root, index or note does not verify.
  const otherRoot = "blake3:" + hex(blake3(Buffer.from("another root")));
  check(!verifyInclusion(entry.integrity.entry_hash, proof.index, sth.size, proof.proof, otherRoot) &&
    !verifyInclusion(entry.integrity.entry_hash, proof.index + 1, sth.size, proof.proof, sth.root),
    "the same proof against another root or leaf does not verify");
  let forged = false;
  try { verifyNote(sth.note.replace(`\n${sth.size}\n`, `\n${sth.size + 1}\n`), info.public_key); forged = true; } catch { /* refused */ }
  check(!forged, "a tree head note with a changed size does not verify");
  console.log(JSON.stringify({ ok: true, root, workspace: ws, checkpoint: cp.id, entry: entry.id, size: sth.size }));
} finally {
  await coord.close();
}
