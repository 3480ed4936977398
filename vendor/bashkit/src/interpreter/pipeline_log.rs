//! clix patch (docs/bashkit-patches.md, "the stages of an exec's
//! pipelines"): the pipelines one `exec` ran, each stage with its command
//! and status, for a host that must not hide a failure inside a pipeline
//! (the pipeline's status is its last stage's; `PIPESTATUS` holds only the
//! last pipeline's, and only for the script itself to read).

use std::sync::Mutex;

use crate::parser::{Command, CompoundCommand};

/// How many pipelines with a failed stage other than the last are kept,
/// besides the last pipeline: a loop that runs a failing pipeline many
/// times holds a bounded list.
const KEPT_WITH_A_FAILURE: usize = 16;

/// One stage of a finished pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineStage {
    /// The stage's command as written: a simple command's name (`jq`), or
    /// a compound command's form: `(…)`, `{…}`, `for`, `while`, `until`,
    /// `if`, `case`, `select`, `((…))`, `[[…]]`, `time`, `coproc`.
    pub command: String,
    /// Its exit status, as `PIPESTATUS` holds it (128+N for signal N, 141
    /// for a writer whose reader stopped).
    pub exit_code: i32,
}

/// A finished pipeline of two stages or more, as `PIPESTATUS` saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineStatus {
    /// Its stages, first to last.
    pub stages: Vec<PipelineStage>,
}

impl PipelineStatus {
    /// A stage other than the last exited non-zero: the pipeline's own
    /// status does not show it.
    pub fn hides_a_failure(&self) -> bool {
        self.stages
            .split_last()
            .is_some_and(|(_, before)| before.iter().any(|s| s.exit_code != 0))
    }
}

/// The pipelines of one `exec`, shared by the shells it forks (concurrent
/// pipeline stages, background jobs), so a pipeline inside a stage, a loop,
/// a function or a `$(…)` is recorded too, in the order they finished.
#[derive(Debug, Default)]
pub(crate) struct PipelineLog(Mutex<Vec<PipelineStatus>>);

impl PipelineLog {
    /// Records a finished pipeline of `commands` with `statuses` (one each).
    /// Kept: the first [`KEPT_WITH_A_FAILURE`] pipelines that hide a
    /// failure, and the last pipeline.
    pub(crate) fn record(&self, commands: &[Command], statuses: &[i32]) {
        let stages = commands
            .iter()
            .zip(statuses)
            .map(|(command, &exit_code)| PipelineStage {
                command: stage_command(command),
                exit_code,
            })
            .collect();
        let mut log = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(previous) = log.pop()
            && previous.hides_a_failure()
            && log.len() < KEPT_WITH_A_FAILURE
        {
            log.push(previous);
        }
        log.push(PipelineStatus { stages });
    }

    /// What was recorded, in the order the pipelines finished; the log is
    /// left empty.
    pub(crate) fn take(&self) -> Vec<PipelineStatus> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// A stage's command as written (see [`PipelineStage::command`]).
fn stage_command(command: &Command) -> String {
    let form = match command {
        Command::Simple(simple) => return simple.name.to_string(),
        Command::Pipeline(pipeline) => {
            return pipeline
                .commands
                .first()
                .map(stage_command)
                .unwrap_or_default();
        }
        Command::List(_) => "{…}",
        Command::Function(_) => "function",
        Command::Compound(compound, _) => match compound {
            CompoundCommand::If(_) => "if",
            CompoundCommand::For(_) | CompoundCommand::ArithmeticFor(_) => "for",
            CompoundCommand::While(_) => "while",
            CompoundCommand::Until(_) => "until",
            CompoundCommand::Case(_) => "case",
            CompoundCommand::Select(_) => "select",
            CompoundCommand::Subshell(_) => "(…)",
            CompoundCommand::BraceGroup(_) => "{…}",
            CompoundCommand::Arithmetic(_) => "((…))",
            CompoundCommand::Time(_) => "time",
            CompoundCommand::Conditional(_) => "[[…]]",
            CompoundCommand::Coproc(_) => "coproc",
        },
    };
    form.to_string()
}
