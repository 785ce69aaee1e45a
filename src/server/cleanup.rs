//! Process-wide cleanup on SIGINT and SIGTERM: child processes, and results not yet committed.
//!
//! `Drop` covers success, error and panic; a signal ends the process without unwinding, so every
//! child we spawn is registered here and the handler continues and kills them before exiting, then
//! runs the hooks its callers passed in (record/ passes the one that moves the partial rows of a
//! run in progress aside, as its `Drop` would have): server/ knows nothing of what they do.
//! A SIGKILL of the harness itself is covered by the parent-death signal set at spawn time; the
//! directories its children wrote in name it, so the next ratelab removes them (`owned_dir`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};

static CHILDREN: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());
/// The temporary directories of live children, removed by the handler after it killed them.
static DIRS: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
static INSTALL: Once = Once::new();
static SWEEP: Once = Once::new();
/// The file in an owned directory that names the ratelab process it belongs to.
const OWNER_FILE: &str = "ratelab.owner";
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
    register_pid(pid as i32);
}

/// A pid, or a process group as its negated leader (kill(2) takes both).
fn register_pid(pid: i32) {
    install_interrupt_handler(None);
    if let Ok(mut set) = CHILDREN.lock() {
        set.insert(pid);
    }
}

/// Remembers a child that leads its own process group, so a signal handler kills the group.
pub fn register_group(pid: u32) {
    register_pid(-(pid as i32));
}

/// Forgets a process group once its leader has been reaped.
pub fn unregister_group(pid: u32) {
    if let Ok(mut set) = CHILDREN.lock() {
        set.remove(&-(pid as i32));
    }
}

/// Kills (after continuing) every process of the group `pid` leads.
pub fn kill_group(pid: u32) {
    // SAFETY: kill(2) on a group we started; a group with no process left gets ESRCH.
    unsafe {
        libc::kill(-(pid as i32), libc::SIGCONT);
        libc::kill(-(pid as i32), libc::SIGKILL);
    }
}

/// Forgets a child pid once it has been reaped.
pub fn unregister(pid: u32) {
    if let Ok(mut set) = CHILDREN.lock() {
        set.remove(&(pid as i32));
    }
}

/// The pids currently registered (a group by its leader's), so tests can check that a restart
/// swapped the old for the new.
pub fn registered() -> Vec<u32> {
    let set = CHILDREN.lock().unwrap_or_else(|p| p.into_inner());
    set.iter().map(|&pid| pid.unsigned_abs()).collect()
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
            remove_owned_dirs();
            eprintln!("ratelab: interrupted; stopped every redis-server and worker it started");
            let hooks = HOOKS.lock().unwrap_or_else(|p| p.into_inner()).clone();
            for hook in hooks {
                hook();
            }
            std::process::exit(130);
        });
    });
}

/// A temporary directory for a child's files (a server's log, RDB, certificates): removed on
/// drop, by the interrupt handler (a signal ends the process without running drops), or, when
/// ratelab died by SIGKILL, by the next ratelab: it holds a file naming the process it belongs to.
pub struct OwnedDir(tempfile::TempDir);

impl OwnedDir {
    /// Creates `$TMPDIR/<prefix>XXXXXX`; the first call also removes what dead ratelabs left.
    pub fn new(prefix: &str) -> std::io::Result<Self> {
        SWEEP.call_once(remove_orphaned_dirs);
        install_interrupt_handler(None);
        let dir = tempfile::Builder::new().prefix(prefix).tempdir()?;
        std::fs::write(dir.path().join(OWNER_FILE), std::process::id().to_string())?;
        DIRS.lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(dir.path().to_path_buf());
        Ok(OwnedDir(dir))
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for OwnedDir {
    fn drop(&mut self) {
        // The TempDir removes the directory itself, right after.
        DIRS.lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(self.0.path());
    }
}

/// Removes every registered directory, once more after a moment if a child killed an instant
/// ago was still writing into it.
fn remove_owned_dirs() {
    let dirs = DIRS.lock().unwrap_or_else(|p| p.into_inner()).clone();
    for dir in dirs {
        if std::fs::remove_dir_all(&dir).is_err() {
            std::thread::sleep(std::time::Duration::from_millis(50));
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// Removes the `ratelab-*` directories in the temporary directory whose owner is no longer
/// running (a ratelab killed by SIGKILL, whose children the parent-death signal took down).
/// Errors are ignored: a directory that cannot be removed is no reason not to run.
fn remove_orphaned_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with("ratelab-") {
            continue;
        }
        let owner = std::fs::read_to_string(entry.path().join(OWNER_FILE));
        let Some(pid) = owner.ok().and_then(|o| o.trim().parse::<u32>().ok()) else {
            continue;
        };
        if !process_running(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether `pid` is a process that has not exited (a zombie has).
fn process_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses, which may itself contain spaces.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X')),
        Err(_) => false,
    }
}

/// A command to spawn and where to send the child.
type SpawnJob = (
    std::process::Command,
    std::sync::mpsc::Sender<std::io::Result<std::process::Child>>,
);

/// Spawns `cmd` (with [`set_parent_death_signal`]) from one thread that lives as long as the
/// harness: the child then outlives whichever thread asked for it. A runtime's blocking thread,
/// which exits after idling a few seconds, would take its children down with it.
pub fn spawn_lasting(mut cmd: std::process::Command) -> std::io::Result<std::process::Child> {
    static SPAWNER: std::sync::OnceLock<Option<std::sync::mpsc::Sender<SpawnJob>>> =
        std::sync::OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (jobs, inbox) = std::sync::mpsc::channel::<SpawnJob>();
        let thread = std::thread::Builder::new().name("ratelab-spawner".into());
        let started = thread.spawn(move || {
            for (mut cmd, reply) in inbox {
                let _ = reply.send(cmd.spawn());
            }
        });
        started.ok().map(|_| jobs)
    });
    set_parent_death_signal(&mut cmd);
    // Without the thread (it could not start), this one spawns: the child lives as long as it.
    let Some(jobs) = spawner else {
        return cmd.spawn();
    };
    let gone = || std::io::Error::other("ratelab's spawner thread is gone");
    let (reply, child) = std::sync::mpsc::channel();
    jobs.send((cmd, reply)).map_err(|_| gone())?;
    child.recv().map_err(|_| gone())?
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
