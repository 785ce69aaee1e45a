//! One run in progress: its staging directory and the meta.json it will leave, assembled here
//! so the frame only says when a run begins and ends.

use super::machine::Sample;
use super::{git_commit, host_meta, suspend_offset_ns, Meta, RecordError, RedisMeta, Staging};
use super::{StallWatch, SuspendCheck};
use crate::context::Ctx;
use crate::load::{OpenLoopHealth, OpenTally};
use std::path::PathBuf;
use std::time::Instant;

/// A run in progress: its staging directory and what meta.json will say about it.
pub struct RunRecord {
    pub staging: Staging,
    experiment: &'static str,
    started_at: String,
    started: Instant,
    suspend_start: i128,
    params: serde_json::Value,
    redis: RedisMeta,
    notes: Vec<String>,
    open_loop: Option<OpenLoopHealth>,
    resources_start: Sample,
    stalls: Option<StallWatch>,
}

impl RunRecord {
    /// Opens the staging directory; `redis` is the server as found before anything ran.
    pub fn begin(
        ctx: &Ctx,
        experiment: &'static str,
        params: &toml::Table,
        redis: RedisMeta,
    ) -> Result<Self, RecordError> {
        // The watcher first: a stall while the staging directory is being made counts too.
        let stalls = StallWatch::start();
        let staging = Staging::new(&ctx.out_dir, experiment)?;
        Ok(RunRecord {
            staging,
            experiment,
            started_at: chrono::Utc::now().to_rfc3339(),
            started: Instant::now(),
            suspend_start: suspend_offset_ns(),
            params: serde_json::to_value(params)?,
            redis,
            notes: Vec::new(),
            open_loop: None,
            resources_start: Sample::take(),
            stalls,
        })
    }

    /// The experiment this run is of.
    pub fn id(&self) -> &'static str {
        self.experiment
    }

    /// Adds a sentence the reader needs to interpret the numbers.
    pub fn note(&mut self, text: impl Into<String>) {
        self.notes.push(text.into());
    }

    /// Counts an open-loop run towards meta.json's verdict on whether the generator kept up.
    pub fn open_loop_run(&mut self, label: &str, tally: &OpenTally) {
        self.open_loop
            .get_or_insert_with(OpenLoopHealth::default)
            .add(label, tally);
    }

    /// Writes meta.json and moves the results into place.
    pub fn finish(self, ctx: &Ctx) -> Result<PathBuf, RecordError> {
        let suspend = SuspendCheck::between(self.suspend_start, suspend_offset_ns());
        let resources = self.resources_start.until(&Sample::take());
        let harness_stalls = self.stalls.and_then(StallWatch::finish);
        let mut notes = self.notes;
        if suspend.suspended {
            notes.push(
                "WARNING: the machine was suspended during this run; timings are not valid".into(),
            );
        }
        if let Some(stalls) = harness_stalls.as_ref().filter(|s| s.stalled()) {
            notes.push(format!("WARNING: {}", stalls.warning()));
        }
        if let Some(health) = &self.open_loop {
            notes.push(health.note());
        }
        let meta = Meta {
            experiment: self.experiment.to_string(),
            profile: ctx.profile.name().to_string(),
            harness_version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: git_commit(),
            started_at: self.started_at,
            ended_at: chrono::Utc::now().to_rfc3339(),
            wall_seconds: self.started.elapsed().as_secs_f64(),
            seed: ctx.seed,
            params: self.params,
            redis: self.redis,
            host: host_meta(),
            pinning: ctx.pin.clone(),
            client_timeouts: ctx.timeouts,
            suspend,
            notes,
            open_loop: self.open_loop,
            resources: Some(resources),
            harness_stalls,
        };
        self.staging.write_json("meta.json", &meta)?;
        self.staging.commit()
    }
}
