//! A [`Proxy`] on a thread and runtime of its own, for harness code that waits on servers or
//! worker processes synchronously while the proxy must go on forwarding. Dropping it stops the
//! runtime, and the proxy with it.

use super::Proxy;
use crate::load::own_thread::OwnThread;
use std::net::SocketAddr;
use std::sync::Arc;

/// A proxy running on its own thread.
pub struct ProxyThread {
    proxy: Arc<Proxy>,
    _thread: OwnThread,
}

impl ProxyThread {
    /// A healed proxy in front of `upstream` (`seed` drives the jitter of delays).
    pub fn start(upstream: SocketAddr, seed: u64) -> std::io::Result<ProxyThread> {
        let (thread, proxy) = OwnThread::spawn("the proxy", move |ready, stopped| async move {
            match Proxy::start(upstream, seed).await {
                Ok(proxy) => {
                    let proxy = Arc::new(proxy);
                    let _ = ready.send(Ok(Arc::clone(&proxy)));
                    // Sender dropped or sent: either way its owner is done with it.
                    let _ = stopped.await;
                }
                Err(e) => drop(ready.send(Err(e))),
            }
        })?;
        Ok(ProxyThread {
            proxy,
            _thread: thread,
        })
    }

    /// The proxy, to switch faults and read its address.
    pub fn proxy(&self) -> &Proxy {
        &self.proxy
    }
}
