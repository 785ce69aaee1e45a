//! `ratelab check`: the failure-mode battery a limiter library runs in its own CI. Each check is
//! one experiment of the quick profile, sized by `check/battery.toml`; what it asserts is the
//! limiter claims that experiment generates (`limiter.<name>.<experiment>.<what>`), judged as
//! every claim is. The outcome is an exit code (0 every claim holds, 1 one differs, 2 the input or
//! an adapter is broken), the claims on stdout, and on request a JUnit report and the claims as
//! claims.json has them. A product over runs, like `publish`: it runs experiments, it is not one.

mod junit;

use crate::analysis::claims::{self, Call, LimiterClaim};
use crate::context::Ctx;
use crate::experiments::limiters::{self, PromiseRow};
use crate::experiments::{self, Experiment};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

const BATTERY: &str = include_str!("battery.toml");

/// One check of the battery: an experiment and the parameters that size it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// What `ratelab check NAME` runs alone.
    pub name: String,
    /// The experiment it runs.
    pub experiment: String,
    /// What its claims assert, in a sentence (docs/check.md, `--list`).
    pub asserts: String,
    /// `--set` values over the quick profile.
    #[serde(default)]
    pub sets: BTreeMap<String, String>,
    /// It judges a limiter on a Redis Cluster: on a server the user names, only if that is a
    /// cluster node (ratelab starts its own 3-node cluster otherwise).
    #[serde(default)]
    pub needs_cluster: bool,
}

#[derive(Deserialize)]
struct BatteryFile {
    check: Vec<Check>,
}

/// Why `check` did not pass: the exit code says which.
#[derive(Debug, thiserror::Error)]
pub enum CheckEnd {
    /// A claim differs (or, with `--strict`, could not be decided): exit 1.
    #[error("{failed} of {claims} limiter claims do not hold{strict}")]
    Failed {
        failed: usize,
        claims: usize,
        strict: &'static str,
    },
    /// Bad input or an adapter that breaks the protocol: exit 2.
    #[error("{0}")]
    Broken(String),
}

impl CheckEnd {
    /// The process's exit code.
    pub fn code(&self) -> u8 {
        match self {
            CheckEnd::Failed { .. } => 1,
            CheckEnd::Broken(_) => 2,
        }
    }
}

/// The battery, in the order it runs.
pub fn battery() -> Result<Vec<Check>, CheckEnd> {
    let file: BatteryFile = toml::from_str(BATTERY)
        .map_err(|e| CheckEnd::Broken(format!("check/battery.toml: {e}")))?;
    Ok(file.check)
}

/// The checks `names` picks (all of them when empty), or which names exist.
pub fn chosen(names: &[String]) -> Result<Vec<Check>, CheckEnd> {
    let all = battery()?;
    if names.is_empty() {
        return Ok(all);
    }
    let known: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
    if let Some(bad) = names.iter().find(|n| !known.contains(&n.as_str())) {
        return Err(CheckEnd::Broken(format!(
            "unknown check `{bad}`; the checks are: {}",
            known.join(", ")
        )));
    }
    Ok(all
        .into_iter()
        .filter(|c| names.contains(&c.name))
        .collect())
}

/// The planned wall time of `checks` for one limiter (analysis/budget.toml's `check` plan).
pub fn plan(checks: &[Check]) -> Result<String, crate::analysis::AnalysisError> {
    let budget = crate::analysis::budget::Budget::load()?;
    let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
    Ok(format!(
        "planned wall time of `ratelab check`, per limiter:\n{}",
        budget.estimate("check", &names)
    ))
}

/// What one check came to.
#[derive(Debug)]
pub struct Ran {
    pub check: Check,
    /// Its experiment's wall time, s.
    pub seconds: f64,
    /// Why it was not run, when it was not (a server the user named, a client the adapter lacks).
    pub skipped: Option<String>,
    /// The limiter whose missing client skipped it, when that was why.
    pub refused: Option<String>,
    /// Its limiter claims and their verdicts.
    pub claims: Vec<Judged>,
    /// What the manifest disclaims that this check would judge (promises.csv, value false).
    pub disclaimed: Vec<PromiseRow>,
}

/// One limiter claim's verdict.
#[derive(Debug)]
pub struct Judged {
    pub claim: LimiterClaim,
    pub call: Call,
    pub measured: String,
}

impl Judged {
    /// Whether it fails the check: it differs, or (strict) it could not be decided.
    pub fn fails(&self, strict: bool) -> bool {
        match self.call {
            Call::Holds => false,
            Call::Differs => true,
            Call::Inconclusive | Call::MachineDependent | Call::NoData => strict,
        }
    }
}

/// Runs `checks` with `ctx`'s limiters into `ctx.out_dir`, each experiment as `ratelab run` would,
/// judging each one's limiter claims; says each as it ends. An experiment that fails stops the
/// battery as broken input (the adapter, its manifest or the machine), naming it.
pub fn run(ctx: &Ctx, checks: &[Check], say: &mut dyn FnMut(&str)) -> Result<Vec<Ran>, CheckEnd> {
    let mut out = Vec::new();
    for check in checks {
        let ran = run_check(ctx, check)?;
        say(&line(&ran));
        out.push(ran);
    }
    Ok(out)
}

/// One check of the battery with `ctx`'s limiters, judged.
pub fn run_check(ctx: &Ctx, check: &Check) -> Result<Ran, CheckEnd> {
    let experiment = experiments::find(&check.experiment)
        .map_err(|e| CheckEnd::Broken(format!("check {}: {e}", check.name)))?;
    let started = Instant::now();
    let broken = |e: &dyn std::fmt::Display| CheckEnd::Broken(format!("{}: {e}", experiment.id()));
    Ok(match run_one(ctx, check, experiment)? {
        Err((skipped, refused)) => Ran {
            check: check.clone(),
            seconds: 0.0,
            skipped: Some(skipped),
            refused,
            claims: Vec::new(),
            disclaimed: Vec::new(),
        },
        Ok(dir) => Ran {
            check: check.clone(),
            seconds: started.elapsed().as_secs_f64(),
            skipped: None,
            refused: None,
            claims: judged(experiment, &dir).map_err(|e| broken(&e))?,
            disclaimed: (limiters::promised(&dir).map_err(|e| broken(&e))?)
                .into_iter()
                .filter(|p| !p.is_made())
                .collect(),
        },
    })
}

/// Why a check was not run, and the limiter whose missing client it was, if one's.
type Skipped = (String, Option<String>);

/// One check's experiment run: its directory, or why it was skipped.
fn run_one(
    ctx: &Ctx,
    check: &Check,
    experiment: &dyn Experiment,
) -> Result<Result<PathBuf, Skipped>, CheckEnd> {
    if let (Some(_), Some(why)) = (&ctx.redis_url, experiment.must_own_server()) {
        return Ok(Err((format!("not on a server you named: {why}"), None)));
    }
    if check.needs_cluster && !on_users_cluster_or_none(ctx)? {
        return Ok(Err((
            "the server you named is not a Redis Cluster node: name one to check the library's cluster client"
                .into(),
            None,
        )));
    }
    let mut ctx = ctx.clone();
    ctx.sets = check.sets.clone().into_iter().collect();
    let broken = |e: &(dyn std::error::Error + 'static)| {
        let why = crate::errors::one_line(e);
        CheckEnd::Broken(format!(
            "check {} ({}): {why}",
            check.name, check.experiment
        ))
    };
    experiment.prepare(&ctx).map_err(|e| broken(&e))?;
    match experiment.run(&ctx) {
        Ok(dir) => Ok(Ok(dir)),
        Err(e) => match no_client_for(&e) {
            Some((name, why)) => Ok(Err((why, Some(name)))),
            None => Err(broken(&e)),
        },
    }
}

/// Whether the run has no server the user named (ratelab starts a cluster), or that server is a
/// node of their cluster.
fn on_users_cluster_or_none(ctx: &Ctx) -> Result<bool, CheckEnd> {
    let target = ctx
        .external()
        .map_err(|e| CheckEnd::Broken(e.to_string()))?;
    match target {
        None => Ok(true),
        Some(t) => (t.is_users_cluster_node()).map_err(|e| CheckEnd::Broken(e.to_string())),
    }
}

/// A limiter process refused for lacking the client the check needs (a cluster's, a Sentinel
/// one): the check does not apply to it, which is not a failure of the library. Its name and why.
fn no_client_for(err: &(dyn std::error::Error + 'static)) -> Option<(String, String)> {
    use crate::experiments::PhaseError;
    use crate::limiter::LimiterError;
    let mut cause = Some(err);
    while let Some(e) = cause {
        // A phase's limiter error is transparent: it is the phase error, not its source.
        let limiter = match e.downcast_ref::<PhaseError>() {
            Some(PhaseError::Limiter(l)) => Some(l),
            _ => e.downcast_ref::<LimiterError>(),
        };
        if let Some(l @ LimiterError::NoClientFor { name, .. }) = limiter {
            return Some((name.clone(), l.to_string()));
        }
        cause = e.source();
    }
    None
}

/// The limiter claims `experiment` generates for its results in `dir`, judged (`check` and the
/// end of `run` say them).
pub fn judged(
    experiment: &dyn Experiment,
    dir: &Path,
) -> Result<Vec<Judged>, crate::analysis::AnalysisError> {
    let generated = experiment.limiter_claims(dir)?;
    let mut judging = claims::Judging::default();
    Ok(generated
        .into_iter()
        .map(|claim| {
            let v = judging.judge(&claim.claim, dir);
            Judged {
                call: Call::of(&claim.claim, &v),
                measured: v.measured,
                claim,
            }
        })
        .collect())
}

/// What one check printed as it ended.
pub fn line(ran: &Ran) -> String {
    let head = format!("{} ({})", ran.check.name, ran.check.experiment);
    if let Some(why) = &ran.skipped {
        return format!("SKIP  {head}: {why}");
    }
    let mut text = format!("check {head}, {:.0} s:", ran.seconds);
    for j in &ran.claims {
        let mark = match j.call {
            Call::Holds => "ok  ",
            Call::Differs => "FAIL",
            _ => "??  ",
        };
        text.push_str(&format!("\n  {mark} {}: {}", j.claim.claim.id, j.measured));
    }
    for p in &ran.disclaimed {
        text.push_str(&format!(
            "\n  not judged on {} ({}): its documentation disclaims it: \"{}\" ({})",
            p.promise, p.strategy, p.quote, p.source
        ));
    }
    if ran.claims.is_empty() && ran.disclaimed.is_empty() {
        text.push_str("\n  (no limiter claim: nothing this check measured judges its algorithm)");
    }
    text
}

/// The battery's outcome: Ok when every claim holds (and, `strict`, every one was decided).
pub fn outcome(ran: &[Ran], strict: bool) -> Result<(), CheckEnd> {
    let all: Vec<&Judged> = ran.iter().flat_map(|r| &r.claims).collect();
    if all.is_empty() {
        return Err(CheckEnd::Broken(
            "no limiter claim was judged: every check was skipped, none applies, or the manifest \
             disclaims what they measure"
                .into(),
        ));
    }
    let failed = all.iter().filter(|j| j.fails(strict)).count();
    match failed {
        0 => Ok(()),
        failed => Err(CheckEnd::Failed {
            failed,
            claims: all.len(),
            strict: if strict { " (strict)" } else { "" },
        }),
    }
}

/// Writes the JUnit report of `ran` to `path`: a test suite per limiter, a test case per claim.
pub fn write_junit(path: &Path, ran: &[Ran], strict: bool) -> std::io::Result<()> {
    std::fs::write(path, junit::render(ran, strict))
}

/// Writes the claims of `ran` to `path` as `claims.json` has them (from the report written into
/// `results`, the run's directory).
pub fn write_json(path: &Path, results: &Path, ran: &[Ran]) -> Result<(), CheckEnd> {
    let text = std::fs::read_to_string(results.join(crate::analysis::claims_json::FILE))
        .map_err(|e| CheckEnd::Broken(format!("{}: {e}", results.display())))?;
    let all: Vec<serde_json::Value> =
        serde_json::from_str(&text).map_err(|e| CheckEnd::Broken(format!("claims.json: {e}")))?;
    let ids: Vec<&str> = (ran.iter().flat_map(|r| &r.claims))
        .map(|j| j.claim.claim.id.as_str())
        .collect();
    let mine: Vec<&serde_json::Value> = (all.iter())
        .filter(|c| c["id"].as_str().is_some_and(|id| ids.contains(&id)))
        .collect();
    let text = serde_json::to_string_pretty(&mine).unwrap_or_else(|_| "[]".into()) + "\n";
    std::fs::write(path, text).map_err(|e| CheckEnd::Broken(format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_battery_parses_and_every_check_names_an_experiment_with_valid_sets() {
        let checks = battery().unwrap();
        assert!(checks.len() >= 5);
        for c in &checks {
            let e = experiments::find(&c.experiment).unwrap();
            assert!(e.takes_limiters() || e.takes_processes(), "{}", c.name);
            let sets: Vec<(String, String)> = c.sets.clone().into_iter().collect();
            e.parameters(crate::context::Profile::Quick, &sets)
                .unwrap_or_else(|err| panic!("{}: {err}", c.name));
        }
        // Every check is planned, so `ratelab estimate check` adds up the whole battery.
        let budget = crate::analysis::budget::Budget::load().unwrap();
        for c in &checks {
            assert!(
                budget.planned("check", &c.name).is_some(),
                "{} has no plan",
                c.name
            );
        }
        assert!(!plan(&checks).unwrap().contains("not in the budget"));
        assert!(chosen(&["nope".into()])
            .unwrap_err()
            .to_string()
            .contains("concurrency"));
        assert_eq!(chosen(&["edge".into()]).unwrap().len(), 1);
    }
}
