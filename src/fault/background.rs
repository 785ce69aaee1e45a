//! A [`Proxy`] on a thread and runtime of its own, for harness code that waits on servers or
//! worker processes synchronously while the proxy must go on forwarding. Dropping it stops the
//! runtime, and the proxy with it.

use super::Proxy;
use std::net::SocketAddr;
use std::sync::Arc;

/// A proxy running on its own thread.
pub struct ProxyThread {
    proxy: Arc<Proxy>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ProxyThread {
    /// A healed proxy in front of `upstream` (`seed` drives the jitter of delays).
    pub fn start(upstream: SocketAddr, seed: u64) -> std::io::Result<ProxyThread> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            let rt = match rt {
                Ok(rt) => rt,
                Err(e) => return drop(ready_tx.send(Err(e))),
            };
            rt.block_on(async move {
                match Proxy::start(upstream, seed).await {
                    Ok(proxy) => {
                        let proxy = Arc::new(proxy);
                        let _ = ready_tx.send(Ok(Arc::clone(&proxy)));
                        // Sender dropped or sent: either way its owner is done with it.
                        let _ = stopped.await;
                    }
                    Err(e) => drop(ready_tx.send(Err(e))),
                }
            });
        });
        let proxy = ready_rx
            .recv()
            .map_err(|_| std::io::Error::other("the proxy's thread ended before it started"))??;
        Ok(ProxyThread {
            proxy,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The proxy, to switch faults and read its address.
    pub fn proxy(&self) -> &Proxy {
        &self.proxy
    }
}

impl Drop for ProxyThread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
