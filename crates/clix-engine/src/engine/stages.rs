//! Debug events that say where each command of a line runs and why, made
//! before the line runs from bashkit's static view of it. (A name the line
//! computes is decided at run time: the OS resolver's own event says it.)

use std::path::PathBuf;

use super::Engine;
use crate::commands::HostChoice;

impl Engine {
    /// Where each command of `line` runs, and why (debug events), in the
    /// order bashkit dispatches a name: a function of the line, one of our
    /// commands (a hub tool among them), one of its builtins, then the OS
    /// resolver: a program on the sandbox's PATH, else the unknown-command error.
    pub(super) fn explain_stages(&self, line: &str) {
        let Some(analysis) = self.shell.analyze(line) else { return };
        for (index, command) in analysis.commands.iter().enumerate() {
            let Some(name) = command.name.as_deref() else {
                if !command.is_assignment_only() {
                    tracing::debug!(
                        index,
                        runs = "decided at run time",
                        reason = "the command name is computed",
                        "stage: where it runs"
                    );
                }
                continue;
            };
            let (runs, reason, program) = self.where_runs(name, &analysis.functions);
            let program = program.map(|p| p.display().to_string());
            tracing::debug!(index, command = name, runs, reason, program, "stage: where it runs");
        }
    }

    /// (where, why, the program that runs) for the command `name`.
    fn where_runs(&self, name: &str, functions: &[String]) -> (&'static str, &'static str, Option<PathBuf>) {
        if functions.iter().any(|f| f == name) {
            return ("shell", "a function defined in this line, run by the in-process shell", None);
        }
        if self.commands.get(name).is_some() {
            return match self.tools_run.iter().find(|(tool, _)| tool == name) {
                Some((_, (runs, reason))) => (runs, reason, None),
                None => ("clix", "one of clix's own commands, in process", None),
            };
        }
        if clix_shell::builtin_names().iter().any(|b| b == name) {
            return ("shell", "a builtin of the in-process shell (bashkit), never a host program", None);
        }
        if name.contains('/') {
            return ("shell", "a path: the in-process shell handles it; host programs run only by name", None);
        }
        match &self.sandbox {
            None => ("unknown", "not a builtin, and the OS tier is off (sandbox.mode = \"off\")", None),
            // The OS resolver's own rule, and its words.
            Some(sandbox) => {
                let choice = HostChoice::of(sandbox, name);
                (choice.runs(), choice.reason(), choice.program().map(PathBuf::from))
            }
        }
    }
}
