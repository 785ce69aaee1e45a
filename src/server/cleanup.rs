//! Process-wide cleanup on SIGINT and SIGTERM: child processes, and results not yet committed.
//!
//! `Drop` covers success, error and panic; a signal ends the process without unwinding, so every
//! child we spawn is registered here and the handler continues and kills them before exiting, then
//! runs the hooks its callers passed in (record/ passes the one that moves the partial rows of a
//! run in progress aside, as its `Drop` would have): server/ knows nothing of what they do.
//! A SIGKILL of the harness itself is covered by the parent-death signal set at spawn time.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};

static CHILDREN: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());
static INSTALL: Once = Once::new();
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// What the handler runs after killing the children, in the order passed in.
static HOOKS: Mutex<Vec<fn()>> = Mutex::new(Vec::new());

/// True once SIGINT or SIGTERM arrived: a run failing now failed because its servers were being
/// stopped, and the process should exit as interrupted (130) whichever thread gets there first.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Remembers a child pid so a signal handler can kill it.
pub fn register(pid: u32) {
    install_interrupt_handler(None);
    if let Ok(mut set) = CHILDREN.lock() {
        set.insert(pid as i32);
    }
}

/// Forgets a child pid once it has been reaped.
pub fn unregister(pid: u32) {
    if let Ok(mut set) = CHILDREN.lock() {
        set.remove(&(pid as i32));
    }
}

/// The pids currently registered, so tests can check that a restart swapped the old for the new.
pub fn registered() -> Vec<u32> {
    match CHILDREN.lock() {
        Ok(set) => set.iter().map(|&pid| pid as u32).collect(),
        Err(poisoned) => poisoned
            .into_inner()
            .iter()
            .map(|&pid| pid as u32)
            .collect(),
    }
}

/// Continues (in case it was SIGSTOPped) and kills every registered child.
pub fn kill_all() {
    let pids: Vec<i32> = match CHILDREN.lock() {
        Ok(set) => set.iter().copied().collect(),
        Err(poisoned) => poisoned.into_inner().iter().copied().collect(),
    };
    for pid in pids {
        // SAFETY: kill(2) on a pid we spawned; a stale pid at worst gets ESRCH.
        unsafe {
            libc::kill(pid, libc::SIGCONT);
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

/// Installs the SIGINT/SIGTERM handler once (also before any child exists: a run's staging
/// directory needs it as soon as rows may be written), and adds `hook` to what it runs after the
/// children are dead; pass each hook once.
pub fn install_interrupt_handler(hook: Option<fn()>) {
    if let Some(hook) = hook {
        HOOKS.lock().unwrap_or_else(|p| p.into_inner()).push(hook);
    }
    INSTALL.call_once(|| {
        // A failure to install (another handler already set, e.g. by an embedding program) leaves
        // the parent-death signal as the safety net, so it is not an error.
        let _ = ctrlc::set_handler(|| {
            INTERRUPTED.store(true, Ordering::SeqCst);
            kill_all();
            eprintln!("ratelab: interrupted; stopped every redis-server and worker it started");
            let hooks = HOOKS.lock().unwrap_or_else(|p| p.into_inner()).clone();
            for hook in hooks {
                hook();
            }
            std::process::exit(130);
        });
    });
}

/// Makes a freshly forked child die with SIGKILL when the harness dies (even by SIGKILL).
///
/// Linux sends the signal when the *thread* that forked the child exits, so spawn long-lived
/// children from a thread that lives as long as they should (the main thread or a test's thread).
pub fn set_parent_death_signal(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as i32;
    // SAFETY: only async-signal-safe calls (prctl, getppid, _exit) run between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before prctl took effect.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}
