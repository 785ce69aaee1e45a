//! One definition per experiment and the one list of them that `list`, `run`, `all`, `chart`
//! and `report` iterate. Adding an experiment: its module with a [`Definition`], its TOML, its
//! claims in analysis/claims.toml, and one line in [`ALL`].

use super::definition::Definition;
use super::error::ExperimentError;
use super::frame;
use super::limiters::{self, Verdict};
use super::params::{self, ExperimentInfo, ParamError};
use super::{
    atomic, bigkey, calibrate, chaos, cluster, cost, describe, eviction, failover, latency,
    libraries, memory, outage, pods, race, refill, replication, scripts, tsmember, window_edge,
};
use crate::analysis::claims::LimiterClaim;
use crate::analysis::limiter_claims::{Cell, Limiters};
use crate::analysis::{AnalysisError, Section};
use crate::charts::ChartError;
use crate::context::{Ctx, Profile};
use crate::record::Table;
use std::path::{Path, PathBuf};

/// An experiment as the registry holds it (object-safe; every [`Definition`] is one).
pub trait Experiment: Sync {
    /// The id on the command line and the results subdirectory.
    fn id(&self) -> &'static str;
    /// Seeds, summary and notes from its TOML.
    fn info(&self) -> Result<ExperimentInfo, ParamError>;
    /// Its embedded `experiments/<id>.toml`, as this build runs it.
    fn toml(&self) -> &'static str;
    /// Why it must own the server, if it must.
    fn must_own_server(&self) -> Option<&'static str>;
    /// Whether it runs custom limiters (`--limiter`).
    fn takes_limiters(&self) -> bool;
    /// Whether it takes limiter processes (asks every limiter through the one decider).
    fn takes_processes(&self) -> bool;
    /// Its verdicts on the custom limiters in `dir`.
    fn verdicts(&self, dir: &Path) -> Result<Vec<Verdict>, AnalysisError>;
    /// Its claims about each custom limiter recorded in `dir` (none when it ran none).
    fn limiter_claims(&self, dir: &Path) -> Result<Vec<LimiterClaim>, AnalysisError>;
    /// Checks the parameters and the precondition without starting anything.
    fn prepare(&self, ctx: &Ctx) -> Result<(), ExperimentError>;
    /// Runs it into `ctx.out_dir/<id>/` and returns that directory.
    fn run(&self, ctx: &Ctx) -> Result<PathBuf, ExperimentError>;
    /// Every CSV it writes, with its columns.
    fn tables(&self) -> Vec<Table>;
    /// Its charts from the CSVs in `dir`.
    fn charts(&self, dir: &Path) -> Result<Vec<PathBuf>, ChartError>;
    /// Its summary for REPORT.md from the CSVs in `dir`.
    fn summary(&self, dir: &Path) -> Result<String, AnalysisError>;
    /// What its results say about the machine, if anything.
    fn machine_fact(&self) -> Option<crate::analysis::MachineFact>;
    /// Every parameter with its type, values, unit and meaning (`ratelab params`).
    fn parameters(
        &self,
        profile: Profile,
        sets: &[(String, String)],
    ) -> Result<describe::Parameters, ExperimentError>;
}

impl<D: Definition> Experiment for D {
    fn id(&self) -> &'static str {
        D::ID
    }
    fn info(&self) -> Result<ExperimentInfo, ParamError> {
        params::info(D::TOML)
    }
    fn toml(&self) -> &'static str {
        D::TOML
    }
    fn must_own_server(&self) -> Option<&'static str> {
        D::MUST_OWN_SERVER
    }
    fn takes_limiters(&self) -> bool {
        D::TAKES_LIMITERS
    }
    fn takes_processes(&self) -> bool {
        D::TAKES_PROCESSES
    }
    fn verdicts(&self, dir: &Path) -> Result<Vec<Verdict>, AnalysisError> {
        (D::VERDICTS)(dir)
    }
    fn limiter_claims(&self, dir: &Path) -> Result<Vec<LimiterClaim>, AnalysisError> {
        let mut claims = Vec::new();
        let promises = limiters::promised(dir)?;
        for l in limiters::recorded(dir)? {
            let at = limiters::ClaimsAt {
                experiment: D::ID,
                dir,
                limiter: &l,
                promises: (promises.iter())
                    .filter(|p| p.strategy == l.strategy)
                    .cloned()
                    .collect(),
            };
            claims.extend((D::LIMITER_CLAIMS)(&at)?);
        }
        Ok(claims)
    }
    fn prepare(&self, ctx: &Ctx) -> Result<(), ExperimentError> {
        frame::prepare::<D>(ctx, takers).map(|_| ())
    }
    fn run(&self, ctx: &Ctx) -> Result<PathBuf, ExperimentError> {
        frame::run::<D>(ctx, takers)
    }
    fn tables(&self) -> Vec<Table> {
        let mut tables = D::tables();
        if D::TAKES_LIMITERS || D::TAKES_PROCESSES {
            tables.push(Table::of_custom_limiters::<limiters::LimiterRow>(
                limiters::LIMITERS_CSV,
            ));
            tables.push(Table::of_custom_limiters::<limiters::PromiseRow>(
                limiters::PROMISES_CSV,
            ));
        }
        tables
    }
    fn charts(&self, dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
        (D::CHARTS)(dir)
    }
    fn summary(&self, dir: &Path) -> Result<String, AnalysisError> {
        (D::SUMMARY)(dir)
    }
    fn machine_fact(&self) -> Option<crate::analysis::MachineFact> {
        D::MACHINE_FACT
    }
    fn parameters(
        &self,
        profile: Profile,
        sets: &[(String, String)],
    ) -> Result<describe::Parameters, ExperimentError> {
        describe::parameters::<D>(profile, sets)
    }
}

/// Every experiment, in the order `all` runs them.
pub static ALL: &[&dyn Experiment] = &[
    &race::Race,
    &atomic::Atomic,
    &cost::Cost,
    &latency::Latency,
    &calibrate::Calibrate,
    &outage::Outage,
    &refill::Refill,
    &tsmember::Tsmember,
    &window_edge::WindowEdge,
    &memory::Memory,
    &bigkey::Bigkey,
    &scripts::Scripts,
    &replication::Replication,
    &eviction::Eviction,
    &failover::Failover,
    &cluster::Cluster,
    &chaos::Chaos,
    &pods::Pods,
    &libraries::Libraries,
];

/// The experiments that take `--limiter`, for the error of one that does not.
fn takers(processes: bool) -> String {
    let takers: Vec<&str> = (ALL.iter())
        .filter(|e| match processes {
            true => e.takes_processes(),
            false => e.takes_limiters(),
        })
        .map(|e| e.id())
        .collect();
    takers.join(", ")
}

/// Looks an id up, or says which ids exist.
pub fn find(id: &str) -> Result<&'static dyn Experiment, ExperimentError> {
    ALL.iter().copied().find(|e| e.id() == id).ok_or_else(|| {
        let valid: Vec<_> = ALL.iter().map(|e| e.id()).collect();
        ExperimentError::Unknown {
            id: id.to_string(),
            valid: valid.join(", "),
        }
    })
}

/// Redraws the charts of every experiment that has results under `results_dir`, returning the
/// files written and, apart, the experiments whose charts failed, so one bad CSV never hides the
/// others. Experiments that were never run (no first CSV) are skipped.
pub fn draw_all(results_dir: &Path) -> (Vec<PathBuf>, Vec<(&'static str, ChartError)>) {
    let mut written = Vec::new();
    let mut problems = Vec::new();
    for e in ALL {
        let dir = results_dir.join(e.id());
        let ran = e
            .tables()
            .first()
            .is_some_and(|t| dir.join(t.file).is_file());
        if !ran {
            continue;
        }
        match e.charts(&dir) {
            Ok(paths) => written.extend(paths),
            Err(err) => problems.push((e.id(), err)),
        }
    }
    (written, problems)
}

/// Writes REPORT.md and claims.csv for `results_dir` over every registered experiment;
/// `not_run` says which did not run this time and why.
pub fn write_report(
    results_dir: &Path,
    not_run: &[(&str, String)],
) -> Result<PathBuf, AnalysisError> {
    let sections: Vec<Section> = (ALL.iter())
        .map(|&e| Section {
            id: e.id(),
            question: (e.info())
                .map(|i| {
                    if i.question.is_empty() {
                        i.summary
                    } else {
                        i.question
                    }
                })
                .unwrap_or_default(),
            summary: Box::new(move |d| e.summary(d)),
            not_run: not_run.iter().find(|n| n.0 == e.id()).map(|n| n.1.clone()),
            machine_fact: e.machine_fact(),
        })
        .collect();
    let limiters = custom_limiters(results_dir);
    crate::analysis::write_report_with(results_dir, &sections, &limiters)
}

/// What the experiments say about the run's custom limiters (`--limiter`'s, and the adapters
/// libraries runs of its own): their claims and describing cells; a bad CSV leaves its part out,
/// saying so.
pub fn custom_limiters(results_dir: &Path) -> Limiters {
    let mut limiters = Limiters::default();
    for e in ALL {
        let dir = results_dir.join(e.id());
        match e.limiter_claims(&dir) {
            Ok(claims) => limiters.claims.extend(claims),
            Err(err) => eprintln!("ratelab: warning: {}'s limiter claims: {err}", e.id()),
        }
        let cells = e.verdicts(&dir).unwrap_or_default().into_iter();
        limiters.cells.extend(cells.map(|v| Cell {
            limiter: v.limiter,
            aspect: v.aspect.to_string(),
            value: v.value,
        }));
        for r in limiters::recorded(&dir).unwrap_or_default() {
            let name = r.strategy.to_string();
            if limiters.what.iter().all(|(n, _)| *n != name) {
                limiters.what.push((name, r.what()));
            }
        }
    }
    limiters
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Profile;

    fn ctx(profile: Profile, sets: &[(&str, &str)]) -> Ctx {
        let mut ctx = Ctx::new(PathBuf::from("/nonexistent"), PathBuf::from("ratelab"));
        ctx.profile = profile;
        ctx.sets = sets
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        ctx
    }

    #[test]
    fn every_embedded_profile_parses_and_validates() {
        for e in ALL {
            for profile in [Profile::Quick, Profile::Full] {
                // A missing tool (redis-benchmark) is this machine's, not the profile's.
                if let Err(err @ ExperimentError::Params(_)) = e.prepare(&ctx(profile, &[])) {
                    panic!("{} {profile:?}: {err}", e.id());
                }
            }
            let info = e.info().unwrap();
            assert_eq!(info.id, e.id());
            assert_eq!(find(e.id()).unwrap().id(), e.id());
            assert!(!e.tables().is_empty(), "{} writes no table", e.id());
            for t in e.tables() {
                assert!(
                    !t.columns.is_empty(),
                    "{} {}: a row type must be a plain struct",
                    e.id(),
                    t.file
                );
            }
        }
        assert!(find("nope")
            .err()
            .is_some_and(|e| e.to_string().contains("race, atomic")));
    }

    #[test]
    fn every_note_names_only_parameters_of_its_profile() {
        for e in ALL {
            for profile in ["quick", "full"] {
                let text = toml_text(e.id());
                let table: toml::Table = toml::from_str(&text).unwrap();
                let params = table[profile].as_table().unwrap();
                for note in e.info().unwrap().notes {
                    let filled = params::fill_in(&note, params);
                    assert!(
                        !filled.contains('{'),
                        "{} [{profile}] note has an unknown name: {filled}",
                        e.id()
                    );
                }
            }
        }
    }

    #[test]
    fn draw_all_skips_what_never_ran_and_reports_a_bad_csv_without_hiding_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        for e in ALL {
            let err = e.charts(&tmp.path().join(e.id())).unwrap_err();
            assert!(matches!(err, ChartError::Missing(_)), "{}: {err}", e.id());
        }
        let reference = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/reference");
        for (id, file) in [("calibrate", "calibrate.csv"), ("mystery", "calibrate.csv")] {
            std::fs::create_dir_all(tmp.path().join(id)).unwrap();
            std::fs::copy(
                reference.join("calibrate").join(file),
                tmp.path().join(id).join(file),
            )
            .unwrap();
        }
        std::fs::create_dir_all(tmp.path().join("race")).unwrap();
        std::fs::write(
            tmp.path().join("race/race.csv"),
            "scenario,strategy\nmatrix,x\n",
        )
        .unwrap();
        let (written, problems) = draw_all(tmp.path());
        assert_eq!(
            written,
            ["calibrate.svg", "calibrate.png"].map(|n| tmp.path().join("calibrate").join(n))
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].0, "race");
    }

    fn toml_text(id: &str) -> String {
        let path = format!("{}/experiments/{id}.toml", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn invalid_values_and_owned_servers_are_caught_before_running() {
        let race = find("race").unwrap();
        let err = race
            .prepare(&ctx(Profile::Quick, &[("trials", "0")]))
            .unwrap_err();
        assert!(err.to_string().contains("trials"), "{err}");
        let mut external = ctx(Profile::Quick, &[]);
        external.redis_url = Some("redis://127.0.0.1:1/".into());
        assert!(race.prepare(&external).is_ok());
        for id in ["outage", "memory", "bigkey"] {
            let err = find(id).unwrap().prepare(&external).unwrap_err();
            assert!(
                matches!(err, ExperimentError::MustOwnServer { .. }),
                "{id}: {err}"
            );
        }
    }
}
