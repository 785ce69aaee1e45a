// ratelab's limiter process protocol, version 1 (PROTOCOL.md), for the Node adapters here: it reads
// the setup line, lets the adapter connect its library, writes the handshake, answers every check as
// its promise settles (many in flight, in any order) and exits when ratelab closes stdin.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');

function say(message) {
  process.stdout.write(JSON.stringify(message) + '\n');
}

function text(err) {
  return String((err && err.message) || err || 'unknown error');
}

// What kind of failure a client's error is: Redis answered NOSCRIPT (the library's script is gone
// and it did not load it again) or another error, the client gave up waiting, or (the default) the
// connection failed or is not ready.
function errorKind(err) {
  // node-redis's ErrorReply keeps the name `Error`: its class says what it is.
  const name = err ? `${err.name || ''} ${(err.constructor && err.constructor.name) || ''}` : '';
  if (/ReplyError|ErrorReply/.test(name)) return /^NOSCRIPT/.test(text(err)) ? 'noscript' : 'reply';
  if (/timed? ?out|timeout/i.test(`${name} ${text(err)}`)) return 'timeout';
  return 'connection';
}

// The version of a package as installed beside the adapter (not as remembered).
function installedVersion(dir, pkg) {
  const manifest = path.join(dir, 'node_modules', pkg, 'package.json');
  return JSON.parse(fs.readFileSync(manifest, 'utf8')).version;
}

// Rejects after `ms` with a timeout: a budget around one check, as a middleware gives it.
function within(ms, promise) {
  let timer;
  const expired = new Promise((_, reject) => {
    const timeout = Object.assign(new Error(`check timed out after ${ms} ms`), { name: 'Timeout' });
    timer = setTimeout(() => reject(timeout), ms);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

function answer(limiter, line) {
  let check;
  try {
    check = JSON.parse(line);
  } catch (err) {
    process.stderr.write(`not a check: ${line.slice(0, 120)}\n`);
    return;
  }
  Promise.resolve()
    .then(() => limiter.check(check.key, check.cost === undefined ? 1 : check.cost))
    .then(
      (decision) => say({ id: check.id, ...decision }),
      (err) => say({ id: check.id, error: text(err), kind: errorKind(err) }),
    );
}

async function begin(adapter, start, line) {
  const setup = JSON.parse(line);
  if (setup.type !== 'setup' || setup.protocol !== 1) {
    throw new Error(`expected a protocol 1 setup line, got: ${line.slice(0, 120)}`);
  }
  const limiter = await start(setup);
  const { library, version, client, clock } = limiter;
  // `cluster` only when the setup named a cluster and the library got a cluster client for it;
  // `sentinel` likewise for Sentinels.
  const cluster = setup.cluster === true && (limiter.cluster === true || madeCluster);
  const sentinel = Boolean(setup.sentinel) && (limiter.sentinel === true || madeSentinel);
  say({
    type: 'ready', protocol: 1, adapter, library, version, client,
    ...(cluster && { cluster }), ...(sentinel && { sentinel }), ...(clock && { clock }),
  });
  return limiter;
}

// Whether ioredisClient made a cluster client, or a Sentinel one (the handshake says so).
let madeCluster = false;
let madeSentinel = false;

// A connected ioredis client (the adapter's own installed `Redis`), the run's timeout as its
// commandTimeout, its errors on stderr (an 'error' event with no listener would end the process).
// When the setup names a cluster, an ioredis Cluster started from that one node: it reads the
// slot map and routes every command to the node owning its key, as an application's would. When it
// names Sentinels, a client that asks them for the primary and asks again after losing it.
async function ioredisClient(Redis, setup) {
  const options = { commandTimeout: setup.timeout_ms };
  const tls = tlsFiles(setup);
  if (tls) options.tls = tls;
  let client;
  if (setup.cluster === true) {
    const url = new URL(setup.redis_url);
    const node = { host: url.hostname, port: Number(url.port || 6379) };
    const redisOptions = { ...options, ...credentials(setup) };
    client = new Redis.Cluster([node], { lazyConnect: true, redisOptions });
    madeCluster = true;
  } else if (setup.sentinel) {
    const sentinels = sentinelNodes(setup);
    client = new Redis({ sentinels, name: setup.sentinel.name, lazyConnect: true, ...options, ...credentials(setup) });
    madeSentinel = true;
  } else {
    client = new Redis(setup.redis_url, { lazyConnect: true, ...options });
  }
  client.on('error', (err) => process.stderr.write(`ioredis: ${err.message}\n`));
  await client.connect();
  return client;
}

// The user name and password in the setup's URL, as a client's options name them (none when absent).
function credentials(setup) {
  const url = new URL(setup.redis_url);
  const out = {};
  if (url.username) out.username = decodeURIComponent(url.username);
  if (url.password) out.password = decodeURIComponent(url.password);
  return out;
}

// The Sentinels the setup names, as { host, port }.
function sentinelNodes(setup) {
  return setup.sentinel.addresses.map((address) => {
    const at = address.lastIndexOf(':');
    return { host: address.slice(0, at), port: Number(address.slice(at + 1)) };
  });
}

// A connected node-redis client for the setup, from the adapter's own `redis` package: a cluster
// (`createCluster` from the node it is told), the Sentinels' primary (`createSentinel`), or one
// server; `options` are the adapter's client options, TLS and credentials added here.
async function nodeRedisClient(redis, setup, options) {
  const tls = tlsFiles(setup);
  options = { ...options, ...(tls && { socket: { ...options.socket, tls: true, ...tls } }) };
  let client;
  if (setup.cluster === true) {
    client = redis.createCluster({
      rootNodes: [{ url: setup.redis_url }], defaults: { ...options, ...credentials(setup) },
    });
  } else if (setup.sentinel) {
    const nodeClientOptions = { ...options, ...credentials(setup) };
    client = redis.createSentinel({
      name: setup.sentinel.name, sentinelRootNodes: sentinelNodes(setup), nodeClientOptions,
    });
  } else {
    client = redis.createClient({ url: setup.redis_url, ...options });
  }
  client.on('error', (err) => process.stderr.write(`node-redis: ${err.message}\n`));
  await client.connect();
  return client;
}

// The TLS files the setup names ({ ca, cert, key } as Node's tls options take them), or null: a
// server whose certificate the system's roots do not vouch for (ratelab's own CA) needs its CA.
function tlsFiles(setup) {
  const files = {};
  for (const [name, path] of [['ca', setup.tls_ca], ['cert', setup.tls_cert], ['key', setup.tls_key]]) {
    if (path) files[name] = fs.readFileSync(path);
  }
  return Object.keys(files).length ? files : null;
}

// Runs an adapter. `start(setup)` connects and resolves to
// { library, version, client, check(key, cost) -> Promise<{allowed, remaining?, retry_after_ms?}>, close() }.
function serve(adapter, start) {
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  let ready = null;
  lines.on('line', (line) => {
    if (ready === null) {
      ready = begin(adapter, start, line).catch((err) => {
        say({ type: 'fatal', error: text(err) });
        process.exit(1);
      });
      return;
    }
    ready.then((limiter) => answer(limiter, line));
  });
  // ratelab closed stdin (the run is over, or ratelab is gone): close the client and leave.
  lines.on('close', () => {
    setTimeout(() => process.exit(0), 1000).unref();
    Promise.resolve(ready)
      .then((limiter) => limiter && limiter.close && limiter.close())
      .catch(() => {})
      .finally(() => process.exit(0));
  });
}

module.exports = {
  serve, installedVersion, within, ioredisClient, nodeRedisClient, tlsFiles, credentials, sentinelNodes,
};
