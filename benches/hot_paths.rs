//! The harness's own hot paths, so a change that slows the load generator shows up here before
//! it shows up as a client-bound measurement. `cargo bench` gives the numbers; `cargo test
//! --all-targets` runs each once in test mode so they never rot. No bench asserts a time.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use ratelab::experiments::cost::CostRow;
use ratelab::fault::Proxy;
use ratelab::limiter::wire;
use ratelab::limiter::{LimitSpec, Limiter, Strategy};
use ratelab::load::{latency, Arrivals, CheckTally, KeyChoice};
use ratelab::record::Staging;
use std::hint::black_box;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One EVALSHA lua-bucket decision onto the wire, and a GET, as the lean worker sends them.
fn encoding(c: &mut Criterion) {
    let bucket = Limiter::new(Strategy::LuaBucket, LimitSpec::default());
    let get = Limiter::new(Strategy::Get, LimitSpec::default());
    let (mut key, mut scratch, mut out) = (String::new(), Vec::new(), Vec::new());
    let mut index = 0u64;
    c.bench_function("encode EVALSHA lua-bucket decision", |b| {
        b.iter(|| {
            out.clear();
            key.clear();
            index = (index + 7919) % 10_000;
            KeyChoice::write_indexed(&mut key, "ratelab:bench:", index);
            bucket
                .encode(black_box(&key), &mut scratch, &mut out)
                .unwrap();
            black_box(out.len())
        })
    });
    // What the lean client sends: the bucket's fixed arguments copied from its key template.
    let template = bucket
        .key_template()
        .expect("the bucket's arguments are fixed");
    c.bench_function(
        "encode EVALSHA lua-bucket decision from its key template",
        |b| {
            b.iter(|| {
                out.clear();
                key.clear();
                index = (index + 7919) % 10_000;
                KeyChoice::write_indexed(&mut key, "ratelab:bench:", index);
                template.encode(black_box(&key), &mut out);
                black_box(out.len())
            })
        },
    );
    c.bench_function("encode GET", |b| {
        b.iter(|| {
            out.clear();
            get.encode(
                black_box("ratelab:bench:000000004242"),
                &mut scratch,
                &mut out,
            )
            .unwrap();
            black_box(out.len())
        })
    });
    let replies = b"*3\r\n:1\r\n:99\r\n:0\r\n".repeat(16);
    c.bench_function("parse 16 decision replies", |b| {
        b.iter(|| {
            let (mut pos, mut admitted) = (0, 0);
            while let Some((reply, used)) = wire::parse(&replies[pos..]).unwrap() {
                admitted += u32::from(bucket.decide_reply(&reply).unwrap().allowed);
                pos += used;
            }
            black_box(admitted)
        })
    });
}

/// The same decisions on the redis-rs path (the experiments' one-at-a-time checks where the lean
/// client does not serve them): the `redis::Cmd` or `redis::Pipeline` the limiter builds, packed,
/// and a reply parsed into a `redis::Value` and converted as the limiter reads it. The
/// multiplexed connection's channel and driver task are not in it: calibrate's redis-rs rows
/// measure them.
fn redis_rs_path(c: &mut Criterion) {
    let spec = LimitSpec::default();
    let bucket = Limiter::new(Strategy::LuaBucket, spec);
    let sha = bucket
        .script()
        .map(|(_, sha)| sha.to_string())
        .unwrap_or_default();
    let (mut key, mut index) = (String::new(), 0u64);
    c.bench_function("redis-rs: pack EVALSHA lua-bucket decision", |b| {
        b.iter(|| {
            key.clear();
            index = (index + 7919) % 10_000;
            KeyChoice::write_indexed(&mut key, "ratelab:bench:", index);
            let packed = redis::cmd("EVALSHA")
                .arg(&sha)
                .arg(1)
                .arg(black_box(&key))
                .arg(spec.capacity)
                .arg(spec.refill_per_sec)
                .arg(1)
                .arg(spec.bucket_ttl_ms())
                .get_packed_command();
            black_box(packed.len())
        })
    });
    c.bench_function("redis-rs: pack GET", |b| {
        b.iter(|| {
            let packed = redis::cmd("GET")
                .arg(black_box("ratelab:bench:000000004242"))
                .get_packed_command();
            black_box(packed.len())
        })
    });
    c.bench_function("redis-rs: pack MULTI INCR PEXPIRE EXEC", |b| {
        b.iter(|| {
            let window = black_box("ratelab:bench:000000004242:29538001");
            let packed = redis::pipe()
                .atomic()
                .incr(window, 1)
                .pexpire(window, spec.window_ttl_ms() as i64)
                .get_packed_pipeline();
            black_box(packed.len())
        })
    });
    let reply = b"*3\r\n:1\r\n:99\r\n:0\r\n";
    c.bench_function("redis-rs: parse a decision reply into Vec<i64>", |b| {
        b.iter(|| {
            let value = redis::parse_redis_value(black_box(reply)).unwrap();
            let decision: Vec<i64> = redis::from_redis_value(value).unwrap();
            black_box(decision[0])
        })
    });
    let exec = b"*2\r\n:42\r\n:1\r\n";
    c.bench_function("redis-rs: parse EXEC's reply into (count,)", |b| {
        b.iter(|| {
            let value = redis::parse_redis_value(black_box(exec)).unwrap();
            let (count, _): (i64, i64) = redis::from_redis_value(value).unwrap();
            black_box(count)
        })
    });
}

/// Recording one latency, and merging 16 workers' histograms into one.
fn histograms(c: &mut Criterion) {
    let mut h = latency::new_histogram().unwrap();
    let mut v = 1u64;
    c.bench_function("record a latency", |b| {
        b.iter(|| {
            v = v
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            h.saturating_record(black_box(50_000 + (v >> 44)));
        })
    });
    let workers: Vec<CheckTally> = (0..16u64)
        .map(|w| {
            let mut h = latency::new_histogram().unwrap();
            for i in 0..20_000u64 {
                h.saturating_record(40_000 + (i * 7919 + w * 104_729) % 2_000_000);
            }
            CheckTally {
                admitted: 20_000,
                latency_ns: latency::buckets(&h),
                ..CheckTally::default()
            }
        })
        .collect();
    c.bench_function("merge 16 worker histograms", |b| {
        b.iter_batched(
            || workers.clone(),
            |workers| {
                let mut merged = CheckTally::default();
                for w in workers {
                    merged.merge(w);
                }
                black_box(merged.latency_histogram().unwrap().len())
            },
            BatchSize::SmallInput,
        )
    });
}

/// An open-loop schedule: 10 s of Poisson arrivals at 5,000/s.
fn schedule(c: &mut Criterion) {
    let arrivals = Arrivals::Poisson {
        rate_per_s: 5_000.0,
        duration_ms: 10_000,
    };
    c.bench_function("build a 50,000-request open-loop schedule", |b| {
        b.iter(|| black_box(arrivals.schedule(black_box(42)).len()))
    });
}

/// One cost row to its CSV file, flushed as every experiment flushes it.
fn csv_row(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let staging = Staging::new(dir.path(), "bench").unwrap();
    let mut sink = staging.csv::<CostRow>("cost.csv").unwrap();
    let row = CostRow {
        strategy: Strategy::LuaBucket,
        variant: "depth=16".into(),
        run: 3,
        depth: 16,
        client: "lean".into(),
        clients: 16,
        keys: 10_000,
        limit: 100,
        window_ms: 1000,
        log_entries_per_key: None,
        log_entries_min: None,
        duration_s: 5.000_241,
        decisions: 588_312,
        decisions_per_s: 117_656.713,
        allowed: 500_000,
        denied: 88_312,
        errors: 0,
        redis_cpu_us: 4_270_000.5,
        cpu_us_per_decision: 7.259_382,
        redis_busy_pct: 85.386_551,
        redis_waiting_for_cpu_pct: Some(0.412_5),
        redis_idle_pct: Some(14.200_9),
        rate_set_by: "client".into(),
        slowlog_threshold_us: Some(10_000),
        slowlog_entries: Some(0),
        slowlog_script_entries: Some(0),
        slowlog_script_slowest_us: Some(0),
        redis_off_cpu_us: None,
        busiest_command: "evalsha".into(),
        usec_per_call: 6.1,
        command_usec_per_decision: 6.2,
        client_cpu_s: 4.707_36,
    };
    c.bench_function("write a CSV row (flushed)", |b| {
        b.iter(|| sink.write(black_box(&row)).unwrap())
    });
    drop(sink);
    staging.commit().unwrap();
}

/// 4 KiB through the fault proxy and back, healed, against a loopback echo upstream.
fn proxy_pump(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (proxy, mut client) = runtime.block_on(async {
        let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream_addr = upstream.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut socket, _) = upstream.accept().await.unwrap();
            let mut buf = vec![0u8; 16 * 1024];
            while let Ok(n) = socket.read(&mut buf).await {
                if n == 0 || socket.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        });
        let proxy = Proxy::start(upstream_addr, 7).await.unwrap();
        let client = tokio::net::TcpStream::connect(proxy.addr()).await.unwrap();
        client.set_nodelay(true).unwrap();
        (proxy, client)
    });
    let payload = vec![b'x'; 4096];
    let mut back = vec![0u8; 4096];
    c.bench_function("fault proxy pump: 4 KiB round trip", |b| {
        b.iter(|| {
            runtime.block_on(async {
                client.write_all(&payload).await.unwrap();
                client.read_exact(&mut back).await.unwrap();
            })
        })
    });
    drop(proxy);
}

criterion_group!(
    benches,
    encoding,
    redis_rs_path,
    histograms,
    schedule,
    csv_row,
    proxy_pump
);
criterion_main!(benches);
