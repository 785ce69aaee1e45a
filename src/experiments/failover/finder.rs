//! A client that finds the primary through the Sentinels, as deployments behind Sentinel do: it
//! asks them for the primary's address (redis-rs's Sentinel client, which also checks with ROLE
//! that the server named is a master), connects there, and on a failed check (a connection
//! error, a READONLY refusal from a demoted primary) asks again and reconnects. The check that
//! failed is not retried: the caller records it as failed. Every move to another server is
//! recorded with its instant. Runs on the drill's local tasks (single-threaded: `Rc`, `RefCell`).

use crate::server::SENTINEL_SERVICE;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ConnectionAddr, RedisError};
use std::cell::RefCell;
use std::time::{Duration, Instant};

/// After a failed ask, the client waits this long before asking again (a check meanwhile fails
/// at once): the Sentinels are not asked once per check while none can name a primary.
const RETRY: Duration = Duration::from_millis(50);

/// A move from one server to another, as the client learned it.
#[derive(Debug, Clone, Copy)]
pub struct Move {
    /// When the client had connected to the server the Sentinels named.
    pub at: Instant,
    pub from_port: u16,
    pub to_port: u16,
}

/// The client's link: the connection (none after a failed ask), where it goes, and its history.
struct Link {
    con: Option<MultiplexedConnection>,
    port: u16,
    /// Bumped on every ask: a failure seen on an older link does not ask again.
    generation: u64,
    asking: bool,
    next_ask: Instant,
    asks: u64,
    moves: Vec<Move>,
}

/// One client finding the primary through the Sentinels.
pub struct Finder {
    sentinels: Vec<String>,
    config: AsyncConnectionConfig,
    link: RefCell<Link>,
}

/// The connection a check uses and the link it belongs to.
pub struct Lease {
    pub con: Option<MultiplexedConnection>,
    pub port: u16,
    generation: u64,
}

impl Finder {
    /// A client of the Sentinels at `sentinel_ports` (loopback), connected to the primary they
    /// name now.
    pub async fn connect(
        sentinel_ports: &[u16],
        config: AsyncConnectionConfig,
    ) -> Result<Finder, RedisError> {
        let sentinels = (sentinel_ports.iter())
            .map(|p| format!("redis://127.0.0.1:{p}/"))
            .collect();
        let finder = Finder {
            sentinels,
            config,
            link: RefCell::new(Link {
                con: None,
                port: 0,
                generation: 0,
                asking: false,
                next_ask: Instant::now(),
                asks: 0,
                moves: Vec::new(),
            }),
        };
        let (port, con) = finder.ask().await?;
        let mut link = finder.link.borrow_mut();
        (link.port, link.con) = (port, Some(con));
        drop(link);
        Ok(finder)
    }

    /// The connection to use now (none while the primary is unknown).
    pub fn lease(&self) -> Lease {
        let link = self.link.borrow();
        Lease {
            con: link.con.clone(),
            port: link.port,
            generation: link.generation,
        }
    }

    /// Where the client sends its checks now.
    pub fn port(&self) -> u16 {
        self.link.borrow().port
    }

    /// A check on `lease` failed: ask the Sentinels again and reconnect, unless another check
    /// already did since that lease, an ask is under way, or the last one failed under `RETRY` ago.
    pub async fn failed(&self, lease: &Lease) {
        {
            let mut link = self.link.borrow_mut();
            let stale = link.generation != lease.generation;
            if stale || link.asking || Instant::now() < link.next_ask {
                return;
            }
            link.asking = true;
        }
        let found = self.ask().await;
        let mut link = self.link.borrow_mut();
        link.asking = false;
        link.asks += 1;
        link.generation += 1;
        match found {
            Ok((port, con)) => {
                if port != link.port {
                    let from_port = link.port;
                    let at = Instant::now();
                    link.moves.push(Move {
                        at,
                        from_port,
                        to_port: port,
                    });
                }
                (link.port, link.con) = (port, Some(con));
            }
            Err(_) => {
                link.con = None;
                link.next_ask = Instant::now() + RETRY;
            }
        }
    }

    /// Asks after the first connection, and the moves to another server.
    pub fn history(&self) -> (u64, Vec<Move>) {
        let link = self.link.borrow();
        (link.asks, link.moves.clone())
    }

    /// The primary's port as the Sentinels name it (checked to be a master) and a connection.
    async fn ask(&self) -> Result<(u16, MultiplexedConnection), RedisError> {
        let mut sentinel = redis::sentinel::Sentinel::build(self.sentinels.clone())?;
        let client = sentinel.async_master_for(SENTINEL_SERVICE, None).await?;
        let port = match client.get_connection_info().addr() {
            ConnectionAddr::Tcp(_, port) => *port,
            other => {
                let what = format!("the Sentinels named {other:?}, not a loopback TCP address");
                return Err(RedisError::from((
                    redis::ErrorKind::InvalidClientConfig,
                    "address",
                    what,
                )));
            }
        };
        let con = client
            .get_multiplexed_async_connection_with_config(&self.config)
            .await?;
        Ok((port, con))
    }
}
