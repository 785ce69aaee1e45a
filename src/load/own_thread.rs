//! A future on a thread and current-thread runtime of its own, for harness code that waits on
//! servers or worker processes synchronously while something must go on answering (the fault
//! proxy, the pods' sink). Dropping the [`OwnThread`] signals the future to stop and joins the
//! thread.

use std::future::Future;
use std::sync::mpsc;
use tokio::sync::oneshot;

/// What the future sends once it is ready (or why it could not start).
pub type Ready<T> = mpsc::Sender<std::io::Result<T>>;
/// Fires (or is dropped) when the owner is done: the future should return.
pub type Stopped = oneshot::Receiver<()>;

/// A running thread; dropping it stops it.
pub struct OwnThread {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl OwnThread {
    /// Runs `body` on a new thread's runtime and waits for what it sends on `Ready` (`what` names
    /// it in the error if the thread ends before it is sent).
    pub fn spawn<T, F, Fut>(what: &str, body: F) -> std::io::Result<(OwnThread, T)>
    where
        T: Send + 'static,
        F: FnOnce(Ready<T>, Stopped) -> Fut + Send + 'static,
        Fut: Future<Output = ()>,
    {
        let (ready, readied) = mpsc::channel();
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            match rt {
                Ok(rt) => rt.block_on(body(ready, stopped)),
                Err(e) => drop(ready.send(Err(e))),
            }
        });
        let value = readied.recv().map_err(|_| {
            std::io::Error::other(format!("{what}'s thread ended before it started"))
        })??;
        let own = OwnThread {
            stop: Some(stop),
            thread: Some(thread),
        };
        Ok((own, value))
    }
}

impl Drop for OwnThread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
