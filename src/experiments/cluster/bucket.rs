//! The token bucket through the cluster: its one key declared in KEYS, so a cluster client routes
//! each check to the bucket's node and the script runs there whole. `clients` clients, each with
//! its own redis-rs cluster-async connection, on one event loop, split every bucket's checks
//! between them (check j of the run goes to client j mod clients), all at once; a bucket that never
//! refills must then admit exactly its capacity, whichever clients asked and however they
//! interleaved, because each check is one script on the node that owns the key.

use super::topology::Topology;
use super::{BucketRow, Params};
use crate::experiments::PhaseError;
use crate::limiter::process::Reach;
use crate::limiter::{Check, Decide, Decider, Decision, Invocation, LimitSpec, LimiterError};
use crate::limiter::{Limiter, Strategy};
use crate::load::ClientTimeouts;
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
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
    let spec = LimitSpec {
        capacity: p.bucket_capacity,
        refill_per_sec: 0.0,
        // Window strategies never roll over during the phase: the limit is exact.
        window_ms: 600_000,
        window_origin_ms: crate::limiter::unix_ms(),
        ..LimitSpec::default()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| PhaseError::Invalid(format!("tokio runtime: {e}")))?;
    let clients = match strategy.is_process() {
        true => adapters(topology, p, timeouts, strategy, spec)?,
        false => rt.block_on(connections(topology, p, timeouts, strategy, spec))?,
    };
    let (tallies, clients) = rt.block_on(checks(clients, &keys, p))?;
    drop(clients);
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

/// One client's way to decide: its own cluster connection running the limiter, or its own
/// limiter process, whose library has its own cluster client.
enum Client {
    Connection(ClusterConnection, Limiter),
    Process(Decider),
}

impl Client {
    async fn decide(&mut self, key: &str) -> Result<Decision, LimiterError> {
        match self {
            Client::Connection(con, limiter) => limiter.attempt_on(con, key).await.outcome,
            Client::Process(decider) => decider.decide(None, Check::one(key)).await.outcome,
        }
    }
}

/// `clients` cluster connections (every one before any client starts), each running `strategy`;
/// its script first on every node when its mode has no fallback, as its library loads it.
async fn connections(
    topology: &Topology,
    p: &Params,
    timeouts: ClientTimeouts,
    strategy: Strategy,
    spec: LimitSpec,
) -> Result<Vec<Client>, PhaseError> {
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
    for node in topology.addresses() {
        let node_client = topology.endpoint_of(&node).client()?;
        let mut con = node_client.get_multiplexed_async_connection().await?;
        crate::limiter::custom::initialise(&mut con, strategy).await?;
    }
    let limiter = Limiter::new(strategy, spec);
    let mut out = Vec::with_capacity(p.bucket_clients);
    for _ in 0..p.bucket_clients {
        out.push(Client::Connection(
            client.get_async_connection().await?,
            limiter.clone(),
        ));
    }
    Ok(out)
}

/// `clients` limiter processes of `strategy`, each given one node of the cluster (its library's
/// cluster client finds the rest), every one started before any client starts.
fn adapters(
    topology: &Topology,
    p: &Params,
    timeouts: ClientTimeouts,
    strategy: Strategy,
    spec: LimitSpec,
) -> Result<Vec<Client>, PhaseError> {
    let node = (topology.addresses().into_iter().next())
        .ok_or_else(|| PhaseError::Invalid("the cluster has no node".into()))?;
    let reach = Reach {
        cluster: true,
        ..timeouts.reach(&topology.endpoint_of(&node).url())
    };
    (0..p.bucket_clients)
        .map(|_| {
            let decider = Decider::reaching(strategy, spec, Invocation::default(), &reach)?;
            Ok(Client::Process(decider))
        })
        .collect::<Result<_, LimiterError>>()
        .map_err(PhaseError::from)
}

/// Every client's checks, all at once: per client, its tally by bucket; the clients are handed
/// back to be dropped outside the runtime (an adapter's drop waits for it to exit). An adapter
/// that breaks the protocol stops the phase; its library failing a check is a counted error.
async fn checks(
    clients: Vec<Client>,
    keys: &[String],
    p: &Params,
) -> Result<(Vec<Tally>, Vec<Client>), PhaseError> {
    let total = p.bucket_requests * keys.len() as u64;
    let stride = clients.len().max(1);
    let mut tasks = tokio::task::JoinSet::new();
    for (c, mut client) in clients.into_iter().enumerate() {
        let keys = keys.to_vec();
        tasks.spawn(async move {
            let mut tally: Tally = vec![(0, 0, 0, None); keys.len()];
            for j in (c as u64..total).step_by(stride) {
                let user = (j % keys.len() as u64) as usize;
                let entry = &mut tally[user];
                match client.decide(&keys[user]).await {
                    Ok(d) if d.allowed => entry.0 += 1,
                    Ok(_) => entry.1 += 1,
                    Err(e @ LimiterError::Process { .. }) => return Err(e),
                    Err(e) => {
                        entry.2 += 1;
                        entry.3.get_or_insert_with(|| e.to_string());
                    }
                }
            }
            Ok((tally, client))
        });
    }
    let (mut tallies, mut clients) = (Vec::new(), Vec::new());
    while let Some(done) = tasks.join_next().await {
        let done =
            done.map_err(|e| PhaseError::Invalid(format!("a bucket client panicked: {e}")))?;
        let (tally, client) = done?;
        if let Client::Process(decider) = &client {
            decider.settle()?;
        }
        tallies.push(tally);
        clients.push(client);
    }
    Ok((tallies, clients))
}
