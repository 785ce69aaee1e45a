//! A replica of a managed primary: a second managed server started with `--replicaof`, a wait
//! until it has caught up (so a comparison of both sides never races replication), and its
//! promotion (`REPLICAOF NO ONE`) with the instant it was sent.

use super::{admin, admin_connection, RedisServer, ServerError, ServerOptions};
use std::time::{Duration, Instant};

impl RedisServer {
    /// Starts a replica of `primary` (own port, own directory, cleaned up like every managed
    /// server), ready once its link is up and it has caught up with the primary's offset.
    pub fn start_replica_of(
        primary: &RedisServer,
        opts: &ServerOptions,
    ) -> Result<RedisServer, ServerError> {
        // The full sync is diskless by default and would wait 5 s for more replicas to join.
        let mut primary_con = primary.connection()?;
        admin::config_set(&mut primary_con, "repl-diskless-sync-delay", "0")?;
        let replica = RedisServer::start_with(opts, Some(primary.port()))?;
        let started = Instant::now();
        replica.wait_link_up(opts.start_timeout)?;
        let left = opts.start_timeout.saturating_sub(started.elapsed());
        wait_caught_up(primary, &replica, left)?;
        Ok(replica)
    }

    /// Starts a replica of `primary` that reaches it through `via_port` on loopback (a fault
    /// proxy in front of the primary, so the replication link itself can be cut), ready once the
    /// primary streams to it. After a diskless sync the primary streams commands only once the
    /// replica's first REPLCONF ACK arrives after the sync has ended; an ACK that came earlier
    /// leaves the link "up" and the stream still until the next one, a second later. A PUBLISH
    /// (propagated, but writing no key) the replica must receive proves the stream flows.
    pub fn start_replica_via(
        primary: &RedisServer,
        via_port: u16,
        opts: &ServerOptions,
    ) -> Result<RedisServer, ServerError> {
        let mut primary_con = primary.connection()?;
        admin::config_set(&mut primary_con, "repl-diskless-sync-delay", "0")?;
        let replica = RedisServer::start_with(opts, Some(via_port))?;
        let started = Instant::now();
        replica.wait_link_up(opts.start_timeout)?;
        redis::cmd("PUBLISH")
            .arg("ratelab:replica-stream")
            .arg("1")
            .query::<i64>(&mut primary_con)?;
        let left = opts.start_timeout.saturating_sub(started.elapsed());
        wait_caught_up(primary, &replica, left)?;
        Ok(replica)
    }

    fn wait_link_up(&self, timeout: Duration) -> Result<(), ServerError> {
        let mut con = self.connection()?;
        let started = Instant::now();
        loop {
            let info = admin::info(&mut con, "replication")?;
            if info.get("master_link_status") == Some("up") {
                return Ok(());
            }
            if started.elapsed() > timeout {
                return Err(ServerError::ReplicaLinkDown {
                    port: self.port(),
                    primary_port: self.replica_of().unwrap_or(0),
                    waited: timeout,
                    link_status: info.get("master_link_status").unwrap_or("?").to_string(),
                    log_tail: self.log_tail(20),
                });
            }
            self.check_alive()?;
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends `REPLICAOF NO ONE` and waits until the server reports `role:master`; returns the
    /// (monotonic) instant the command was sent, so a failover can be timed from it.
    pub fn promote(&self) -> Result<Instant, ServerError> {
        let mut con = self.connection()?;
        let sent = Instant::now();
        redis::cmd("REPLICAOF")
            .arg("NO")
            .arg("ONE")
            .query::<()>(&mut con)?;
        // A restart must not make it a replica again.
        *self.replica_of() = None;
        let timeout = self.options().start_timeout;
        loop {
            let info = admin::info(&mut con, "replication")?;
            if info.get("role") == Some("master") {
                return Ok(sent);
            }
            if sent.elapsed() > timeout {
                return Err(ServerError::NotPromoted {
                    port: self.port(),
                    waited: timeout,
                    role: info.get("role").unwrap_or("?").to_string(),
                });
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Waits until the replica has processed everything the primary had sent when called (its
/// `slave_repl_offset` reaches the primary's `master_repl_offset`); returns how long that took.
pub fn wait_caught_up(
    primary: &RedisServer,
    replica: &RedisServer,
    timeout: Duration,
) -> Result<Duration, ServerError> {
    let mut primary_con = admin_connection(&primary.url())?;
    let mut replica_con = admin_connection(&replica.url())?;
    let target = admin::info_u64(&mut primary_con, "replication", "master_repl_offset")?;
    let started = Instant::now();
    loop {
        let info = admin::info(&mut replica_con, "replication")?;
        // `slave_repl_offset` is what a replica has processed; `master_repl_offset` is the same
        // on a replica and stays meaningful once it is promoted.
        let reached = ["slave_repl_offset", "master_repl_offset"]
            .iter()
            .find_map(|field| info.get(field)?.parse::<u64>().ok());
        if reached.is_some_and(|offset| offset >= target) {
            return Ok(started.elapsed());
        }
        if started.elapsed() > timeout {
            return Err(ServerError::NotCaughtUp {
                primary_port: primary.port(),
                replica_port: replica.port(),
                primary_offset: target,
                replica_offset: reached.map_or_else(|| "none".to_string(), |o| o.to_string()),
                waited: timeout,
            });
        }
        replica.check_alive()?;
        std::thread::sleep(Duration::from_millis(2));
    }
}
