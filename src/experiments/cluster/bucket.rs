//! The token bucket through the cluster: its one key declared in KEYS, so a cluster client routes
//! each check to the bucket's node and the script runs there whole. `clients` clients, each with
//! its own redis-rs cluster-async connection, on one event loop, split every bucket's checks
//! between them (check j of the run goes to client j mod clients), all at once; a bucket that never
//! refills must then admit exactly its capacity, whichever clients asked and however they
//! interleaved, because each check is one script on the node that owns the key.

use super::topology::Topology;
use super::{BucketRow, Params};
use crate::experiments::PhaseError;
use crate::limiter::{LimitSpec, Limiter, Strategy};
use crate::load::ClientTimeouts;
use redis::cluster::ClusterClient;
use std::time::Duration;

/// What one client saw of one bucket: admitted, denied, errors, first error.
type Seen = (u64, u64, u64, Option<String>);
/// What one client saw, per bucket.
type Tally = Vec<Seen>;

/// Retries the cluster client may make on a redirection or a lost connection (stated, not left
/// to the library's default of 16).
const RETRIES: u32 = 3;

/// Runs the checks and returns one row per bucket.
pub(super) fn run(
    topology: &Topology,
    p: &Params,
    prefix: &str,
    timeouts: ClientTimeouts,
) -> Result<Vec<BucketRow>, PhaseError> {
    run_strategy(
        topology,
        p,
        &format!("{prefix}bucket:"),
        timeouts,
        Strategy::LuaBucket,
    )
}

/// The same checks with any strategy that runs on a cluster connection (a custom limiter: its
/// keys as its manifest declares them, so an undeclared one fails where it lives elsewhere).
pub(super) fn run_strategy(
    topology: &Topology,
    p: &Params,
    prefix: &str,
    timeouts: ClientTimeouts,
    strategy: Strategy,
) -> Result<Vec<BucketRow>, PhaseError> {
    let keys: Vec<String> = (0..p.bucket_users)
        .map(|u| format!("{prefix}user:{u}"))
        .collect();
    let mut urls = Vec::new();
    let mut certs = None;
    for node in topology.addresses() {
        let (url, node_certs) =
            crate::server::endpoint::cluster_node(&topology.endpoint_of(&node).url())?;
        urls.push(url);
        certs = certs.or(node_certs);
    }
    let mut builder = ClusterClient::builder(urls)
        .connection_timeout(Duration::from_millis(timeouts.connect_ms))
        .response_timeout(Duration::from_millis(timeouts.response_ms))
        .retries(RETRIES);
    if let Some(certs) = certs {
        builder = builder.certs(certs);
    }
    let client = builder.build()?;
    let limiter = Limiter::new(
        strategy,
        LimitSpec {
            capacity: p.bucket_capacity,
            refill_per_sec: 0.0,
            // Window strategies never roll over during the phase: the limit is exact.
            window_ms: 600_000,
            window_origin_ms: crate::limiter::unix_ms(),
            ..LimitSpec::default()
        },
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| PhaseError::Invalid(format!("tokio runtime: {e}")))?;
    // A mode without a fallback needs its script on every node first, as its library loads it.
    for node in topology.addresses() {
        rt.block_on(async {
            let client = topology.endpoint_of(&node).client()?;
            let mut con = client.get_multiplexed_async_connection().await?;
            crate::limiter::custom::initialise(&mut con, strategy).await
        })?;
    }
    let tallies = rt.block_on(checks(&client, &limiter, &keys, p))?;
    let rows = keys.iter().enumerate().map(|(u, key)| {
        let (slot, node) = topology.place(key);
        let per_client = tallies.iter().map(|t| &t[u]);
        let sum = |f: fn(&Seen) -> u64| per_client.clone().map(f).sum();
        BucketRow {
            user: u as u64,
            key: key.clone(),
            slot,
            node,
            clients: p.bucket_clients as u64,
            requests: p.bucket_requests,
            admitted: sum(|t| t.0),
            denied: sum(|t| t.1),
            errors: sum(|t| t.2),
            capacity: p.bucket_capacity,
            first_error: per_client
                .clone()
                .find_map(|t| t.3.clone())
                .unwrap_or_default(),
        }
    });
    Ok(rows.collect())
}

async fn checks(
    client: &ClusterClient,
    limiter: &Limiter,
    keys: &[String],
    p: &Params,
) -> Result<Vec<Tally>, PhaseError> {
    // Every connection first, so no client starts before the last one is connected.
    let mut cons = Vec::with_capacity(p.bucket_clients);
    for _ in 0..p.bucket_clients {
        cons.push(client.get_async_connection().await?);
    }
    let total = p.bucket_requests * keys.len() as u64;
    let clients = p.bucket_clients as u64;
    let mut tasks = tokio::task::JoinSet::new();
    for (c, mut con) in cons.into_iter().enumerate() {
        let (limiter, keys) = (limiter.clone(), keys.to_vec());
        tasks.spawn(async move {
            let mut tally: Tally = vec![(0, 0, 0, None); keys.len()];
            for j in (c as u64..total).step_by(clients as usize) {
                let user = (j % keys.len() as u64) as usize;
                let entry = &mut tally[user];
                match limiter.attempt_on(&mut con, &keys[user]).await.outcome {
                    Ok(d) if d.allowed => entry.0 += 1,
                    Ok(_) => entry.1 += 1,
                    Err(e) => {
                        entry.2 += 1;
                        entry.3.get_or_insert_with(|| e.to_string());
                    }
                }
            }
            tally
        });
    }
    let mut tallies = Vec::with_capacity(p.bucket_clients);
    while let Some(done) = tasks.join_next().await {
        tallies
            .push(done.map_err(|e| PhaseError::Invalid(format!("a bucket client panicked: {e}")))?);
    }
    Ok(tallies)
}
