//! A chat's own commands (`/diff`, `/undo`, `/rewind`, `/mode`, `/model`,
//! `/cost`, `/clear`): read from a typed line and carried out on the
//! session's agent and checkpoints, each returning what a person reads. Any
//! front end with a chat uses them; how it shows them is its own.

use std::path::Path;

use anyhow::{Context, Result, bail};
use clix_agent::{Agent, Resumable, Usage};
use clix_checkpoint::CheckpointStore;
use clix_config::Paths;
use clix_workspace::Workspace;

use crate::Session;

/// Every chat command, as `/help` and an unknown command list them.
pub const CHAT_COMMANDS: &str = "/diff [all]    what the last task (or the whole chat) changed in the workspace
/undo [all]    the workspace as it was before the last task (or the first)
/rewind N      back to step N, in the conversation and the workspace
/mode [MODE]   the mode; /mode review or /mode auto switches it
/model [NAME]  the model; /model NAME asks NAME from the next call on
/cost          the tokens (and cost, with prices set) of this chat so far
/clear         a fresh conversation (the workspace is left as it is)
/help          this list
/exit          leave";

/// A chat command as typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatCommand {
    /// `/exit` or `/quit`.
    Exit,
    /// `/help`.
    Help,
    /// `/cost`.
    Cost,
    /// `/diff`, or `/diff all` for the whole chat.
    Diff {
        /// The whole chat, not only the last task.
        all: bool,
    },
    /// `/undo`, or `/undo all` for the whole chat.
    Undo {
        /// The whole chat, not only the last task.
        all: bool,
    },
    /// `/rewind N`; `None` when N is missing or not a step number.
    Rewind(Option<u32>),
    /// `/mode`, or `/mode MODE` to switch.
    Mode(Option<String>),
    /// `/model`, or `/model NAME` to switch.
    Model(Option<String>),
    /// `/clear`.
    Clear,
    /// Any other word starting with `/`.
    Unknown(String),
}

impl ChatCommand {
    /// The command `line` is; `None` when it is a task (it does not start with `/`).
    pub fn parse(line: &str) -> Option<ChatCommand> {
        let line = line.trim();
        if !line.starts_with('/') {
            return None;
        }
        let mut words = line.split_whitespace();
        let (command, arg) = (words.next().unwrap_or_default(), words.next());
        let all = arg == Some("all");
        Some(match command {
            "/exit" | "/quit" => ChatCommand::Exit,
            "/help" => ChatCommand::Help,
            "/cost" => ChatCommand::Cost,
            "/diff" => ChatCommand::Diff { all },
            "/undo" => ChatCommand::Undo { all },
            "/rewind" => ChatCommand::Rewind(arg.and_then(|a| a.parse().ok()).filter(|n| *n >= 1)),
            "/mode" => ChatCommand::Mode(arg.map(str::to_string)),
            "/model" => ChatCommand::Model(arg.map(str::to_string)),
            "/clear" => ChatCommand::Clear,
            other => ChatCommand::Unknown(other.to_string()),
        })
    }
}

/// What a command shows: a diff (for stdout) and notes (for stderr).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Shown {
    /// A unified diff of the workspace's changes, as written (the front
    /// end escapes it for its terminal).
    pub diff: Option<String>,
    /// One line each.
    pub notes: Vec<String>,
}

impl Shown {
    fn note(note: impl Into<String>) -> Shown {
        Shown { diff: None, notes: vec![note.into()] }
    }
}

/// A chat between tasks: where the last task began, and what the chat's
/// tasks have used so far.
#[derive(Debug, Default)]
pub struct Chat {
    /// The first step of the last task, for `/diff` and `/undo`.
    turn_start: u32,
    /// The tokens of this chat's tasks, for `/cost`.
    spent: Usage,
}

impl Chat {
    /// A chat of `agent`'s run (a resumed one's last task counts as the last).
    pub fn new(session: &Session, agent: &Agent<'_>) -> Chat {
        Chat { turn_start: last_step(session, agent) + 1, spent: Usage::default() }
    }

    /// A task is about to run: `/diff` and `/undo` mean it from now on.
    pub fn task_starts(&mut self, session: &Session, agent: &Agent<'_>) {
        self.turn_start = last_step(session, agent) + 1;
    }

    /// A task ended, having used `usage`.
    pub fn task_done(&mut self, usage: Usage) {
        self.spent.add(usage);
    }

    /// The tokens this chat's tasks used.
    pub fn spent(&self) -> Usage {
        self.spent
    }

    /// Carries out `command` (all but `/exit` and `/help`, which are the
    /// front end's); an error says what went wrong and what to do.
    pub fn run(&mut self, session: &Session, agent: &mut Agent<'_>, command: ChatCommand) -> Result<Shown> {
        Ok(match command {
            ChatCommand::Exit | ChatCommand::Help => Shown::default(),
            ChatCommand::Cost => Shown::note(format!(
                "this chat so far: {}",
                clix_agent::replay::usage_text(&self.spent, agent.cost_of(&self.spent), agent.currency())
            )),
            ChatCommand::Diff { all } | ChatCommand::Undo { all } => {
                let from = if all { 1 } else { self.turn_start };
                let run = agent.run_id().context("this chat keeps no run, so nothing is checkpointed")?.to_string();
                let (workspace, store) = checkpoints(&session.paths, &session.workspace)?;
                if matches!(command, ChatCommand::Diff { .. }) {
                    let sets: Vec<_> =
                        store.changes_of(&run).unwrap_or_default().into_iter().filter(|s| s.step >= from).collect();
                    if sets.is_empty() {
                        return Ok(Shown::note(format!(
                            "nothing changed{}",
                            if from > 1 { " in the last task" } else { "" }
                        )));
                    }
                    Shown { diff: Some(clix_checkpoint::diff(&store, &sets)?), notes: Vec::new() }
                } else {
                    let report = clix_checkpoint::undo(&store, &workspace, &run, from, false)?;
                    let mut shown = Shown::note(format!("put back {} paths", report.restored.len()));
                    shown.notes.extend(report.left.iter().map(|(path, why)| format!("  left {path}: {why}")));
                    shown
                }
            }
            ChatCommand::Rewind(step) => {
                let step = step.context(
                    "/rewind N goes back to step N (the model asked for it again, the workspace as before it); \
                     clix replay shows the steps",
                )?;
                let run = agent.run_id().context("this chat keeps no run to go back in")?.to_string();
                let back = clix_agent::resumable_before(&crate::runs_dir(&session.paths), &run, step)?;
                let shown = go_back(session, &back, step)?;
                agent.set_conversation(back.messages);
                shown
            }
            ChatCommand::Mode(None) => Shown::note(format!(
                "mode: {} (/mode review or /mode auto switches it)",
                agent.tools_mut().mode().name()
            )),
            ChatCommand::Mode(Some(name)) => {
                let mode: clix_engine::WorkMode = name.parse().map_err(anyhow::Error::msg)?;
                agent.tools_mut().set_mode(mode)?;
                Shown::note(format!("mode: {}", mode.name()))
            }
            ChatCommand::Model(None) => Shown::note(format!("model: {}", agent.model())),
            ChatCommand::Model(Some(name)) => {
                agent.set_model(&name);
                Shown::note(format!("model: {name} from the next call on"))
            }
            ChatCommand::Clear => {
                agent.set_conversation(Vec::new());
                Shown::note("a fresh conversation; the workspace is as the last task left it")
            }
            ChatCommand::Unknown(other) => bail!("unknown command {other}; the chat's commands are:\n{CHAT_COMMANDS}"),
        })
    }
}

/// The workspace in `dir` and its checkpoints in the person's state folder.
pub fn checkpoints(paths: &Paths, dir: &Path) -> Result<(Workspace, CheckpointStore)> {
    let workspace = Workspace::open(dir)?;
    let store = CheckpointStore::open(&paths.state_dir, workspace.root())
        .with_context(|| format!("the checkpoint store in {}", paths.state_dir.display()))?;
    Ok((workspace, store))
}

/// The workspace as it was before step `step` of `run` (its calls from
/// there on undone); stops, saying what was left, when a path the person
/// changed since is in the way.
pub fn go_back(session: &Session, run: &Resumable, step: u32) -> Result<Shown> {
    let Some(from) = run.undo_from else {
        return Ok(Shown::note(format!("back at step {step} of run {}: its later steps changed no file", run.id)));
    };
    let (workspace, store) = checkpoints(&session.paths, &session.workspace)?;
    let report = clix_checkpoint::undo(&store, &workspace, &run.id, from, false)?;
    if !report.left.is_empty() {
        let left: Vec<String> = report.left.iter().map(|(p, why)| format!("{p}: {why}")).collect();
        bail!(
            "could not go back to step {step}: {}\n(`clix undo {} --step {from} --force` puts them back too, keeping \
             yours as PATH.clix-undo-backup)",
            left.join("; "),
            run.id
        );
    }
    Ok(Shown::note(format!("back at step {step} of run {}: {} paths put back", run.id, report.restored.len())))
}

/// The last step of the chat's run that changed the workspace (0: none yet).
fn last_step(session: &Session, agent: &Agent<'_>) -> u32 {
    let Some(run) = agent.run_id() else { return 0 };
    let Ok((_, store)) = checkpoints(&session.paths, &session.workspace) else { return 0 };
    store.changes_of(run).ok().and_then(|sets| sets.last().map(|s| s.step)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_a_command_or_a_task() {
        let rows: &[(&str, Option<ChatCommand>)] = &[
            ("fix the test", None),
            ("  /exit ", Some(ChatCommand::Exit)),
            ("/quit", Some(ChatCommand::Exit)),
            ("/diff", Some(ChatCommand::Diff { all: false })),
            ("/undo all", Some(ChatCommand::Undo { all: true })),
            ("/rewind 3", Some(ChatCommand::Rewind(Some(3)))),
            ("/rewind 0", Some(ChatCommand::Rewind(None))),
            ("/rewind x", Some(ChatCommand::Rewind(None))),
            ("/mode review", Some(ChatCommand::Mode(Some("review".into())))),
            ("/model", Some(ChatCommand::Model(None))),
            ("/model gpt-4o", Some(ChatCommand::Model(Some("gpt-4o".into())))),
            ("/clear", Some(ChatCommand::Clear)),
            ("/cost", Some(ChatCommand::Cost)),
            ("/help", Some(ChatCommand::Help)),
            ("/modle x", Some(ChatCommand::Unknown("/modle".into()))),
        ];
        for (line, want) in rows {
            assert_eq!(ChatCommand::parse(line), *want, "{line}");
        }
    }
}
