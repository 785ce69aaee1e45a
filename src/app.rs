//! The command-line edge: turns a parsed command into library calls and prints where results are.

use crate::analysis;
use crate::charts;
use crate::cli::{Cli, Command};
use crate::experiments::Experiment;
use anyhow::Context;
use std::path::Path;

/// Executes one command.
pub fn execute(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::List => list(),
        Command::Run { id, run, sets } => {
            let experiment = Experiment::from_id(&id)?;
            let ctx = run.into_ctx(&sets)?;
            pin_harness(&ctx);
            let dir = experiment
                .run(&ctx)
                .with_context(|| format!("experiment `{id}` failed"))?;
            finish_experiment(experiment, &dir);
            Ok(())
        }
        Command::All { run } => {
            let ctx = run.into_ctx(&[])?;
            for &experiment in Experiment::ALL {
                experiment.check_params(ctx.profile, &ctx.sets)?;
            }
            pin_harness(&ctx);
            for &experiment in Experiment::ALL {
                eprintln!(
                    "ratelab: running {} ({} profile)",
                    experiment.id(),
                    ctx.profile.name()
                );
                let dir = experiment
                    .run(&ctx)
                    .with_context(|| format!("experiment `{}` failed", experiment.id()))?;
                finish_experiment(experiment, &dir);
            }
            let report = analysis::write_report(&ctx.out_dir)?;
            println!("report: {}", report.display());
            Ok(())
        }
        Command::Chart { dir } => chart(&dir),
        Command::Report { dir } => {
            let report = analysis::write_report(&dir)?;
            println!("report: {}", report.display());
            Ok(())
        }
        Command::Worker => Ok(crate::load::worker_main()?),
    }
}

fn list() -> anyhow::Result<()> {
    for &experiment in Experiment::ALL {
        let info = experiment.info()?;
        println!(
            "{:<12} seed {:<10} {}",
            experiment.id(),
            info.seeds.join(","),
            info.summary
        );
    }
    Ok(())
}

fn pin_harness(ctx: &crate::context::Ctx) {
    if let Err(e) = ctx.pin_harness() {
        eprintln!(
            "ratelab: warning: could not pin the harness to CPUs {:?}: {e}",
            ctx.pin.harness
        );
    }
}

/// Charts and a summary for one finished experiment; a chart problem is reported, never fatal.
fn finish_experiment(experiment: Experiment, dir: &Path) {
    println!("{}: results in {}", experiment.id(), dir.display());
    match charts::render_experiment(experiment.id(), dir) {
        Ok(paths) => paths
            .iter()
            .for_each(|p| println!("  chart: {}", p.display())),
        Err(e) => eprintln!(
            "ratelab: warning: chart for {} failed: {e}",
            experiment.id()
        ),
    }
    match analysis::summarize_experiment(experiment.id(), dir) {
        Ok(text) => print!("{text}"),
        Err(e) => eprintln!(
            "ratelab: warning: summary for {} failed: {e}",
            experiment.id()
        ),
    }
}

fn chart(dir: &Path) -> anyhow::Result<()> {
    anyhow::ensure!(dir.is_dir(), "{} is not a results directory", dir.display());
    let (written, problems) = charts::render_all(dir);
    for path in &written {
        println!("chart: {}", path.display());
    }
    for (what, err) in &problems {
        eprintln!("ratelab: chart {what} failed: {err}");
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
