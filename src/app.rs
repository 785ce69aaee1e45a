//! The command-line edge: turns a parsed command into library calls and prints where results are.

use crate::analysis;
use crate::analysis::claims::{Call, LIMITER_SEED};
use crate::cli::{Cli, Command};
use crate::context::{Ctx, Profile};
use crate::experiments::params::parse_set;
use crate::experiments::{self, Experiment, ExperimentError};
use crate::progress::{RunProgress, Step, Ticker};
use anyhow::Context;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `print!` that outlives its reader: `ratelab list | head` closes the pipe early, and a run whose
/// reader went away still has results to write and servers to stop, so a broken pipe is not an
/// error (std's `print!` panics on it). Any other failure to write is named on stderr.
macro_rules! say {
    ($($arg:tt)*) => { write_stdout(format_args!($($arg)*)) };
}

/// `println!` for [`say!`].
macro_rules! sayln {
    ($($arg:tt)*) => { write_stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Writes to stdout for [`say!`]; a broken pipe is silence, anything else a line on stderr.
fn write_stdout(args: std::fmt::Arguments) {
    use std::io::Write;
    match std::io::stdout().lock().write_fmt(args) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("ratelab: writing to stdout: {e}")
        }
        _ => {}
    }
}

/// Executes one command.
pub fn execute(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::List => list(),
        Command::Run {
            id,
            run,
            sets,
            limiters,
        } => {
            let experiment = experiments::find(&id)?;
            let mut ctx = run.into_ctx(&sets)?;
            ctx.limiters = crate::cli::load_limiters(&limiters)?;
            experiment.prepare(&ctx)?;
            pin_harness(&ctx);
            let plan = Plan::of(&ctx, &[experiment]);
            let ticker = plan.start(&ctx, 0);
            let dir = experiment
                .run(&ctx)
                .with_context(|| format!("experiment `{id}` failed"))?;
            drop(ticker);
            finish_experiment(experiment, &dir);
            Ok(())
        }
        Command::All { ids, run } => all(&run.into_ctx(&[])?, &ids),
        Command::Chart { dir } => chart(&dir),
        Command::Report { dirs, out } => match dirs.as_slice() {
            [dir] => {
                has_results(dir)?;
                say_unfinished(dir);
                write_report(dir, &[])?;
                // A scoreboard's run: its board is redrawn from the same CSVs.
                if dir.join(crate::scoreboard::SCOREBOARD_MD).is_file() {
                    crate::scoreboard::write(dir)?;
                }
                Ok(())
            }
            _ => {
                // The comparison is one file (and its .html beside it): a directory there would
                // fail only after every run was read.
                if let Some(path) = out.as_deref().filter(|p| p.is_dir()) {
                    anyhow::bail!(
                        "--out {} is a directory: name the comparison's file (e.g. {}/COMPARE.md)",
                        path.display(),
                        path.display()
                    );
                }
                for dir in &dirs {
                    has_results(dir)?;
                }
                let ids: Vec<&str> = experiments::ALL.iter().map(|e| e.id()).collect();
                // Charts are linked from where the comparison is written, so it can be committed.
                let from: Option<PathBuf> = out.as_deref().map(|p| match p.parent() {
                    Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
                    _ => PathBuf::from("."),
                });
                let from = from.as_deref();
                let text = analysis::compare::side_by_side(&dirs, &ids, from)?;
                match out {
                    Some(path) => {
                        let html = path.with_extension("html");
                        for (file, body) in [
                            (&path, text.clone()),
                            (&html, analysis::compare::page(&text, from)?),
                        ] {
                            std::fs::write(file, body)
                                .with_context(|| format!("writing {}", file.display()))?;
                            sayln!("comparison: {}", file.display());
                        }
                    }
                    None => say!("{text}"),
                }
                Ok(())
            }
        },
        Command::Publish { dir, out, title } => publish(&dir, out.as_deref(), title.as_deref()),
        Command::Verify { path } => verify(&path),
        Command::Params { id, profile, sets } => params(&id, profile, &sets),
        Command::Estimate { ids, profile, sets } => estimate(&ids, profile, &sets),
        Command::Check {
            names,
            limiters,
            junit,
            json,
            strict,
            list,
            out,
            redis_server,
            redis_url,
            quiet,
        } => {
            if list {
                return list_checks();
            }
            let run = battery_run(out, redis_server, redis_url, quiet);
            let outputs = CheckOutputs {
                junit: junit.as_deref(),
                json: json.as_deref(),
                strict,
            };
            check(run, &names, &limiters, outputs)
        }
        Command::Scoreboard {
            checks,
            only,
            adapters,
            out,
            redis_server,
            quiet,
        } => {
            let run = battery_run(out, redis_server, None, quiet);
            scoreboard(run, &checks, &adapters, &only)
        }
        Command::Worker => Ok(crate::load::worker_main()?),
    }
}

/// The planned time of `ids` (default: every registered experiment) in `profile`, and the total;
/// `sets` are checked against the one experiment named and named as outside the plan.
fn estimate(ids: &[String], profile: Profile, sets: &[String]) -> anyhow::Result<()> {
    // `ratelab estimate check`: the battery's plan, per limiter; `scoreboard`: every adapter's.
    if let [only] = ids {
        if only == "check" {
            say!("{}", crate::check::plan(&crate::check::battery()?)?);
            return Ok(());
        }
        if only == "scoreboard" {
            say!("{}", crate::scoreboard::plan(&crate::check::battery()?)?);
            return Ok(());
        }
    }
    let budget = crate::analysis::budget::Budget::load()?;
    let chosen: Vec<&str> = match ids {
        [] => experiments::ALL.iter().map(|e| e.id()).collect(),
        _ => (ids.iter())
            .map(|id| experiments::find(id).map(|e| e.id()))
            .collect::<Result<_, _>>()?,
    };
    if !sets.is_empty() {
        let [id] = ids else {
            anyhow::bail!("--set is for one experiment: name it (ratelab estimate <id> --set ...)");
        };
        experiments::find(id)?.parameters(profile, &parse_sets(sets)?)?;
    }
    // The plans are measured on different builds (analysis/budget.toml): quick's, a debug build
    // as the tests run it, can exceed full's release-build figure for the same experiment.
    let build = match profile {
        Profile::Quick => "a debug build's, as the tests run it; a release build takes less",
        Profile::Full => "a release build's",
    };
    sayln!("planned wall time, profile {} ({build}):", profile.name());
    say!("{}", budget.estimate(profile.name(), &chosen));
    if !sets.is_empty() {
        sayln!("{}", unplanned_sets(sets));
    }
    Ok(())
}

/// Every parameter of experiment `id` and its planned time in `profile`.
fn params(id: &str, profile: Profile, sets: &[String]) -> anyhow::Result<()> {
    let experiment = experiments::find(id)?;
    let parameters = experiment.parameters(profile, &parse_sets(sets)?)?;
    say!("{}", parameters.render());
    let budget = crate::analysis::budget::Budget::load()?;
    let planned = budget
        .planned(profile.name(), id)
        .map_or("not planned".into(), |s| {
            let s = s.round() as u64;
            format!("{}:{:02}", s / 60, s % 60)
        });
    sayln!(
        "\nplanned time of {id}, profile {}: {planned} (analysis/budget.toml)",
        profile.name()
    );
    if !sets.is_empty() {
        sayln!("{}", unplanned_sets(sets));
    }
    Ok(())
}

fn parse_sets(sets: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    Ok(sets
        .iter()
        .map(|s| parse_set(s))
        .collect::<Result<_, _>>()?)
}

/// What a plan for the profile as written does not account for.
fn unplanned_sets(sets: &[String]) -> String {
    format!(
        "the plan is for the profile as written: with --set {} the time changes by what that \
         value changes, which the plan does not model",
        sets.join(" --set ")
    )
}

fn list() -> anyhow::Result<()> {
    for experiment in experiments::ALL {
        let info = experiment.info()?;
        sayln!(
            "{:<12} seed {:<10} {}",
            experiment.id(),
            info.seeds.join(","),
            info.summary
        );
    }
    Ok(())
}

/// Every experiment that can run here: parameters and preconditions checked up front (an
/// experiment that may not run is skipped with its reason), a failure does not stop the rest,
/// and charts and REPORT.md are written for what finished. Fails naming every failure.
fn all(ctx: &Ctx, ids: &[String]) -> anyhow::Result<()> {
    for id in ids {
        experiments::find(id)?;
    }
    std::fs::create_dir_all(&ctx.out_dir)
        .with_context(|| format!("creating {}", ctx.out_dir.display()))?;
    let mut not_run: Vec<(&'static str, String)> = Vec::new();
    let mut runnable = Vec::new();
    let named = |id: &str| ids.is_empty() || ids.iter().any(|i| i == id);
    for &experiment in experiments::ALL.iter().filter(|e| named(e.id())) {
        match experiment.prepare(ctx) {
            Ok(()) => runnable.push(experiment),
            // A bad --set or a broken parameter file is the user's to fix before an hour's run.
            Err(e @ ExperimentError::Params(_)) => return Err(e.into()),
            Err(e) => {
                let reason = crate::errors::one_line(&e);
                eprintln!("ratelab: skipping {}: {reason}", experiment.id());
                not_run.push((experiment.id(), format!("skipped: {reason}")));
            }
        }
    }
    pin_harness(ctx);
    let mut failures = Vec::new();
    let mut finished = 0;
    let plan = Plan::of(ctx, &runnable);
    for (i, experiment) in runnable.into_iter().enumerate() {
        let ticker = plan.start(ctx, i);
        let ran = experiment.run(ctx);
        drop(ticker);
        match ran {
            Ok(dir) => {
                finished += 1;
                finish_experiment(experiment, &dir)
            }
            Err(e) => {
                let reason = crate::errors::one_line(&e);
                eprintln!("ratelab: experiment `{}` failed: {reason}", experiment.id());
                not_run.push((experiment.id(), format!("failed: {reason}")));
                failures.push(experiment.id());
            }
        }
    }
    let report = write_report(&ctx.out_dir, &not_run)?;
    anyhow::ensure!(
        failures.is_empty(),
        "{} of {} experiments failed: {} (see {})",
        failures.len(),
        failures.len() + finished,
        failures.join(", "),
        report.display()
    );
    Ok(())
}

/// The partial rows of runs that did not finish (`.<id>.failed/`), which the report leaves out:
/// said, so that they are neither mistaken for results nor forgotten.
fn say_unfinished(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut failed: Vec<String> = (entries.flatten())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.starts_with('.') && n.ends_with(".failed"))
        .collect();
    failed.sort();
    for name in failed {
        eprintln!(
            "ratelab: note: {}/{name}/ holds the partial rows of a run that did not finish; the report \
             reads only the complete results beside it (delete it once read)",
            dir.display()
        );
    }
}

/// A directory `report` can work from: one with at least one experiment's results.
fn has_results(dir: &Path) -> anyhow::Result<()> {
    anyhow::ensure!(
        dir.exists(),
        "{} does not exist: name a results directory (e.g. results/latest, written by `ratelab run`)",
        dir.display()
    );
    anyhow::ensure!(dir.is_dir(), "{} is not a results directory", dir.display());
    let ran = experiments::ALL
        .iter()
        .any(|e| (e.tables().first()).is_some_and(|t| dir.join(e.id()).join(t.file).is_file()));
    anyhow::ensure!(
        ran,
        "{} has no results: no <experiment>/ directory with its CSVs in it \
         (write some with `ratelab run <id> --out {}`)",
        dir.display(),
        dir.display()
    );
    Ok(())
}

/// REPORT.md over every registered experiment; `not_run` says which did not run this time and why.
/// Says every file it wrote and the verdicts' counts (from the claims.csv it wrote).
fn write_report(dir: &Path, not_run: &[(&str, String)]) -> anyhow::Result<PathBuf> {
    let report = experiments::write_report(dir, not_run)?;
    sayln!("report: {}", report.display());
    for also in [
        "REPORT.html",
        "claims.csv",
        crate::analysis::claims_json::FILE,
    ] {
        sayln!("  also: {}", dir.join(also).display());
    }
    let rows: Vec<BTreeMap<String, String>> =
        crate::record::csv_file::read(&dir.join("claims.csv"))?;
    // claims.csv spells each verdict as its label, "not run" for none; the seeds' claims first,
    // then the custom limiters'.
    let calls = |limiters: bool| -> Vec<Option<Call>> {
        (rows.iter())
            .filter(|r| r.get("seed").is_some_and(|s| s == LIMITER_SEED) == limiters)
            .map(|r| {
                Call::ALL
                    .into_iter()
                    .find(|c| r.get("verdict").is_some_and(|v| v == c.label()))
            })
            .collect()
    };
    let seeds = calls(false);
    sayln!("{} claims: {}", seeds.len(), Call::counts(&seeds));
    let limiters = calls(true);
    if !limiters.is_empty() {
        let counts = Call::counts(&limiters);
        sayln!("{} custom limiter claims: {counts}", limiters.len());
    }
    Ok(report)
}

/// Publishes `dir`, then verifies the archive it wrote: an archive that would not verify is
/// reported as a failure, never handed out silently.
fn publish(dir: &Path, out: Option<&Path>, title: Option<&str>) -> anyhow::Result<()> {
    let published = crate::publish::publish_titled(dir, out, title)
        .with_context(|| format!("publishing {}", dir.display()))?;
    for rel in &published.tomls_added {
        sayln!("{rel}: from the publishing build (the run predates recording it)");
    }
    for name in &published.left_out {
        eprintln!("ratelab: left out {name}: not an experiment of this build");
    }
    sayln!(
        "archive: {} ({} files, {} bytes, package {})",
        published.archive.display(),
        published.files,
        published.bytes,
        published.name
    );
    verify(&published.archive)
}

/// Verifies an archive or directory and prints every check; fails unless all hold.
fn verify(path: &Path) -> anyhow::Result<()> {
    let report =
        crate::publish::verify(path).with_context(|| format!("verifying {}", path.display()))?;
    say!("{}", report.render());
    anyhow::ensure!(
        report.passed(),
        "{} does not verify: {} problem(s) above",
        path.display(),
        report.problems()
    );
    sayln!("verified: every check holds");
    Ok(())
}

/// The experiments of a run with their planned times, saying where the run is as each starts.
struct Plan<'a> {
    experiments: Vec<(&'a str, Option<f64>)>,
    progress: RunProgress,
}

impl<'a> Plan<'a> {
    /// `experiments` in the order they run, planned from analysis/budget.toml for `ctx`'s
    /// profile (none planned when it cannot be read: the run does not depend on it).
    fn of(ctx: &Ctx, experiments: &[&'a dyn Experiment]) -> Self {
        let budget = crate::analysis::budget::Budget::load().ok();
        let planned = |id| {
            budget
                .as_ref()
                .and_then(|b| b.planned(ctx.profile.name(), id))
        };
        Plan {
            experiments: experiments
                .iter()
                .map(|e| (e.id(), planned(e.id())))
                .collect(),
            progress: RunProgress::new(experiments.len(), ctx.progress_lines),
        }
    }

    /// Says the `i`-th (0-based) starts; its ticker talks until dropped.
    fn start(&self, ctx: &Ctx, i: usize) -> Ticker {
        let (id, planned) = self.experiments[i];
        let planned_left = self.experiments[i..].iter().filter_map(|e| e.1).sum();
        self.progress.start(&Step {
            number: i + 1,
            id,
            profile: ctx.profile.name(),
            planned,
            planned_left,
        })
    }
}

fn pin_harness(ctx: &Ctx) {
    if let Err(e) = ctx.pin_harness() {
        eprintln!(
            "ratelab: warning: could not pin the harness to CPUs {:?}: {e}",
            ctx.pin.harness
        );
    }
}

/// Charts and a summary for one finished experiment; a chart problem is reported, never fatal.
fn finish_experiment(experiment: &dyn Experiment, dir: &Path) {
    sayln!("{}: results in {}", experiment.id(), dir.display());
    match experiment.charts(dir) {
        Ok(paths) => paths
            .iter()
            .for_each(|p| sayln!("  chart: {}", p.display())),
        Err(e) => eprintln!(
            "ratelab: warning: chart for {} failed: {}",
            experiment.id(),
            crate::errors::one_line(&e)
        ),
    }
    match experiment.summary(dir) {
        Ok(text) => say!("{text}"),
        Err(e) => eprintln!(
            "ratelab: warning: summary for {} failed: {}",
            experiment.id(),
            crate::errors::one_line(&e)
        ),
    }
    say_verdicts(experiment.id(), dir);
    say_limiter_verdicts(experiment, dir);
}

/// The verdicts of experiment `id`'s claims on its results in `dir`: the counts, then each
/// claim that does not hold with what was measured (REPORT.md says why).
fn say_verdicts(id: &str, dir: &Path) {
    let claims = match analysis::claims::all() {
        Ok(claims) => claims,
        Err(e) => return eprintln!("ratelab: warning: claims: {}", crate::errors::one_line(&e)),
    };
    let mut judging = analysis::claims::Judging::default();
    let calls: Vec<_> = (claims.iter().filter(|c| c.experiment == id))
        .map(|c| {
            let v = judging.judge(c, dir);
            (c, Call::of(c, &v), v.measured)
        })
        .collect();
    if calls.is_empty() {
        return;
    }
    let counts = Call::counts(&calls.iter().map(|c| Some(c.1)).collect::<Vec<_>>());
    sayln!("verdicts of {id}'s {} claims: {counts}", calls.len());
    for (claim, call, measured) in calls.iter().filter(|c| c.1 != Call::Holds) {
        sayln!("  {:<12} {}: {measured}", call.label(), claim.id);
    }
}

/// The verdicts of the custom limiters' claims on `experiment`'s results in `dir`, each limiter's
/// with what was measured (the Custom limiters table of REPORT.md says why).
fn say_limiter_verdicts(experiment: &dyn Experiment, dir: &Path) {
    let judged = match crate::check::judged(experiment, dir) {
        Ok(judged) => judged,
        Err(e) => {
            return eprintln!(
                "ratelab: warning: limiter claims: {}",
                crate::errors::one_line(&e)
            )
        }
    };
    if judged.is_empty() {
        return;
    }
    let counts = Call::counts(&judged.iter().map(|j| Some(j.call)).collect::<Vec<_>>());
    sayln!(
        "verdicts of the custom limiters' {} claims: {counts}",
        judged.len()
    );
    for j in &judged {
        sayln!(
            "  {:<12} {}: {}",
            j.call.label(),
            j.claim.claim.id,
            j.measured
        );
    }
}

/// Redraws the charts of every experiment that has results under `dir`.
fn chart(dir: &Path) -> anyhow::Result<()> {
    anyhow::ensure!(dir.is_dir(), "{} is not a results directory", dir.display());
    let (written, problems) = experiments::draw_all(dir);
    for path in &written {
        sayln!("chart: {}", path.display());
    }
    for (id, err) in &problems {
        eprintln!(
            "ratelab: chart {id} failed: {}",
            crate::errors::one_line(err)
        );
    }
    anyhow::ensure!(
        problems.is_empty() || !written.is_empty(),
        "no chart could be drawn"
    );
    anyhow::ensure!(
        !written.is_empty(),
        "no CSVs with charts found under {}",
        dir.display()
    );
    Ok(())
}

/// Where `check` writes besides stdout, and how strictly it judges.
struct CheckOutputs<'a> {
    junit: Option<&'a Path>,
    json: Option<&'a Path>,
    strict: bool,
}

/// `ratelab check`: the battery over `limiters`, the claims said as each check ends, REPORT.md in
/// the results directory, the JUnit and JSON files asked for; the outcome as the error's exit code.
fn check(
    run: crate::cli::RunArgs,
    names: &[String],
    limiters: &[PathBuf],
    outputs: CheckOutputs,
) -> anyhow::Result<()> {
    use crate::check::{self as battery, CheckEnd};
    let broken = |e: anyhow::Error| CheckEnd::Broken(crate::errors::one_line(&*e));
    let checks = battery::chosen(names)?;
    let mut ctx = run.into_ctx(&[]).map_err(broken)?;
    ctx.limiters = crate::cli::load_limiters(limiters).map_err(broken)?;
    pin_harness(&ctx);
    let ran = battery::run(&ctx, &checks, &mut |line| sayln!("{line}"))?;
    let report = experiments::write_report(&ctx.out_dir, &[]).map_err(|e| broken(e.into()))?;
    sayln!("report: {}", report.display());
    if let Some(path) = outputs.junit {
        battery::write_junit(path, &ran, outputs.strict)
            .map_err(|e| CheckEnd::Broken(format!("{}: {e}", path.display())))?;
        sayln!("junit: {}", path.display());
    }
    if let Some(path) = outputs.json {
        battery::write_json(path, &ctx.out_dir, &ran)?;
        sayln!("json: {}", path.display());
    }
    battery::outcome(&ran, outputs.strict)?;
    let claims: usize = ran.iter().map(|r| r.claims.len()).sum();
    sayln!("check: every one of {claims} limiter claims holds");
    Ok(())
}

/// How `check` and `scoreboard` run the battery's experiments: the quick profile, the checks'
/// own `--set` values on top, on ratelab's servers or the one `redis_url` names.
fn battery_run(
    out: PathBuf,
    redis_server: PathBuf,
    redis_url: Option<String>,
    quiet: bool,
) -> crate::cli::RunArgs {
    crate::cli::RunArgs {
        profile: Profile::Quick,
        out,
        redis_server,
        redis_url,
        tls_ca: None,
        tls_cert: None,
        tls_key: None,
        tls: false,
        seed: 0x5eed,
        quiet,
    }
}

/// `ratelab scoreboard`: the battery (or the checks `names` picks) over every adapter, then
/// REPORT.md and SCOREBOARD.md. A library that breaks the protocol stops it (`--only` leaves it out).
fn scoreboard(
    run: crate::cli::RunArgs,
    names: &[String],
    adapters: &Path,
    only: &[String],
) -> anyhow::Result<()> {
    let checks = crate::check::chosen(names)?;
    let manifests = crate::scoreboard::adapters(adapters, only)?;
    let mut ctx = run.into_ctx(&[])?;
    ctx.limiters = crate::cli::load_limiters(&manifests)?;
    pin_harness(&ctx);
    crate::scoreboard::run(&ctx, &checks, &mut |line| sayln!("{line}"))?;
    let report = experiments::write_report(&ctx.out_dir, &[])?;
    sayln!("report: {}", report.display());
    sayln!(
        "scoreboard: {}",
        crate::scoreboard::write(&ctx.out_dir)?.display()
    );
    Ok(())
}

/// Every check of the battery with what it asserts.
fn list_checks() -> anyhow::Result<()> {
    let battery = crate::check::battery()?;
    for c in &battery {
        sayln!("{:<12} {:<12} {}", c.name, c.experiment, c.asserts);
    }
    say!("{}", crate::check::plan(&battery)?);
    Ok(())
}
