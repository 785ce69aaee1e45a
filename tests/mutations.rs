//! Every claim in analysis/claims.toml shown able to hold and able to fail. For each claim a
//! mutation of the reference rows it reads is derived from the claim's own definition (its
//! statistic, selection, judge, tolerance or range, and the reference rows it is set beside): one
//! moves the judged value inside what the claim accepts, one outside. The judge must then say
//! "holds" and "DIFFERS". A claim that no mutation of its rows can fail judges nothing.
//! No Redis: the reference run's CSVs are rewritten in temporary directories (tests/common/mutation.rs).

use crate::common;

use common::mutation::cannot_move;
use ratelab::analysis::claims;
use ratelab::analysis::table::{read_rows, Row};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn reference() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("results/reference")
}

#[test]
fn every_claim_can_hold_and_can_fail_on_its_own_rows() {
    let all = claims::all().unwrap();
    let mut files: BTreeMap<PathBuf, Vec<Row>> = BTreeMap::new();
    let mut failures = Vec::new();
    for claim in &all {
        let path = reference().join(&claim.experiment).join(&claim.file);
        let all_rows = files.entry(path.clone()).or_insert_with(|| {
            read_rows(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        });
        failures.extend(cannot_move(claim, all_rows));
    }
    assert!(
        failures.is_empty(),
        "{} of {} claims cannot be moved both ways by their rows:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
    let figures = all.iter().filter(|c| c.machine_dependent).count();
    println!(
        "{} of {} claims can hold and can fail ({figures} of them machine-dependent figures, each judged by \
         its machine-independent part)",
        all.len(),
        all.len()
    );
}

/// A machine-dependent figure is shown beside this machine's facts, never called holds or
/// DIFFERS: what it says that does not depend on the machine is judged by the claims it names.
#[test]
fn every_machine_dependent_figure_names_the_claims_that_judge_it() {
    let all = claims::all().unwrap();
    for figure in all.iter().filter(|c| c.machine_dependent) {
        assert!(
            !figure.judged_by.is_empty(),
            "{}: names no judged claim",
            figure.id
        );
        for id in &figure.judged_by {
            let judged = all.iter().find(|c| &c.id == id);
            let judged = judged.unwrap_or_else(|| panic!("{}: no claim {id}", figure.id));
            assert!(
                !judged.machine_dependent,
                "{}: {id} is machine-dependent too",
                figure.id
            );
        }
    }
}

/// The claims the experiments generate for the custom limiters of the reference run (the seeds'
/// adapters that libraries runs), each able to hold and to fail on its own rows.
#[test]
fn every_limiter_claim_of_the_reference_can_hold_and_fail() {
    let checked = common::mutation::every_limiter_claim_can_hold_and_fail(&reference());
    assert!(
        checked >= 5,
        "only {checked} limiter claims in the reference"
    );
    println!("{checked} limiter claims can hold and can fail");
}
