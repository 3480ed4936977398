//! One session's gate: the policy's decision on each command about to run,
//! turned into "run it" or a refusal the model can act on, with what the
//! person said (`ask`), what `--allow` lets through, and an audit event for
//! every decision other than a plain allow.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::policy::{Policy, Verdict};
use crate::rule::{Decision, Scope};
use crate::words::{Context, basename};

/// What a person answered to an `ask`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Run it this once (`y`).
    Once,
    /// Run it, and every command this rule asks about, for the rest of the session (`a`).
    Always,
    /// Do not run it (`n`, or anything else).
    No,
}

/// What a person is asked.
#[derive(Debug, Clone)]
pub struct Approval {
    /// The exact command, as it is about to run.
    pub command: String,
    /// The rule's reason.
    pub why: String,
    /// Where the rule lives (`rule `x` in FILE`).
    pub place: String,
}

/// Someone who can answer an `ask`: a terminal's person. Sessions without
/// one (MCP, `--jsonl`, no terminal) treat `ask` as `deny`.
pub trait Approver: Send + Sync {
    /// Blocks until the person answers.
    fn approve(&self, request: &Approval) -> Answer;
}

/// One decision other than a plain allow, for the audit log.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyEvent {
    /// The command, as it was about to run.
    pub command: String,
    /// What happened: `allow` (it ran) or `deny`.
    pub outcome: Decision,
    /// What the rule decided (`ask` or `deny`, or `allow` after an ask).
    pub decision: Decision,
    /// The rule, or `None` for the policy's default.
    pub rule: Option<String>,
    /// Where the rule lives.
    pub rule_file: Option<String>,
    /// Who answered: `rule`, `person`, `session` (an earlier "always"), `--allow`, or `no one`.
    pub answered_by: &'static str,
}

/// Receives every decision other than a plain allow (the engine writes the audit line).
pub type AuditSink = Arc<dyn Fn(&PolicyEvent) + Send + Sync>;

/// A session's choices about its gate.
#[derive(Default, Clone)]
pub struct GateOptions {
    /// Who answers `ask`; `None` means no one, so `ask` refuses.
    pub approver: Option<Arc<dyn Approver>>,
    /// Receives every decision other than a plain allow.
    pub audit: Option<AuditSink>,
}

/// The policy of one session, applied command by command.
pub struct Gate {
    policy: Arc<Policy>,
    ctx: Context,
    approver: Option<Arc<dyn Approver>>,
    audit: Option<AuditSink>,
    state: Mutex<GateState>,
}

#[derive(Default)]
struct GateState {
    /// Rules the person answered "always" for.
    always: HashSet<String>,
    /// The first commands of the current line that ran, for a refusal's message.
    ran: Vec<String>,
    /// How many ran in all (a loop may run thousands).
    ran_count: usize,
    /// Rules whose `ask` was let through during the current line (by the
    /// person, `--allow` or an earlier "always"): a program the line starts
    /// in the sandbox is not asked about again, nor audited twice.
    allowed_in_line: HashSet<String>,
    /// A program the line started in the sandbox was refused: the rest of
    /// the line does not run, as after a refusal in the shell.
    stopped: bool,
}

/// How many commands that ran a refusal names before it only counts them.
const RAN_SHOWN: usize = 6;

impl Gate {
    /// A gate over `policy` for a session in `ctx`.
    pub fn new(policy: Arc<Policy>, ctx: Context, options: GateOptions) -> Gate {
        Gate { policy, ctx, approver: options.approver, audit: options.audit, state: Mutex::default() }
    }

    /// The rules in force.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Where the session runs.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// A new line starts: what ran before is no longer part of its story.
    pub fn line_start(&self) {
        let mut state = self.state();
        state.ran.clear();
        state.ran_count = 0;
        state.allowed_in_line.clear();
        state.stopped = false;
    }

    /// What `clix policy check` shows for `line` run in `cwd`: the
    /// decisions `run` takes there (see [`Policy::check_line`]).
    pub fn check_line(&self, line: &str, cwd: Option<&Path>) -> Result<Vec<crate::LineEntry>, crate::Unparsable> {
        self.policy.check_line(line, &self.ctx.at(cwd.map(Path::to_path_buf)))
    }

    /// A program about to start inside the sandbox (the exec-time check),
    /// in `cwd` when known. Only rules decide here: the policy's default
    /// was the line's to apply, and a line allowed by it may run whatever
    /// programs its commands start (a build runs hundreds). It is decided
    /// on `argv` with its program named both by the path executed and by
    /// `argv[0]`, so neither name hides the other; a rule the person
    /// answered "once" for in this line is not asked again.
    pub fn admit_exec(&self, path: &str, argv: &[String], cwd: Option<&Path>) -> Result<(), Refusal> {
        let ctx = self.ctx.at(cwd.map(Path::to_path_buf));
        let mut as_run = argv.to_vec();
        match as_run.first_mut() {
            Some(first) => *first = path.to_string(),
            None => as_run.push(path.to_string()),
        }
        let by_path = self.policy.decide(&as_run, &ctx);
        let by_name = if argv.first().is_some_and(|a| basename(a) != basename(path)) {
            Some(self.policy.decide(argv, &ctx))
        } else {
            None
        };
        let verdict = match by_name {
            Some(v) if v.rule.is_some() && (by_path.rule.is_none() || v.decision > by_path.decision) => v,
            _ => by_path,
        };
        if verdict.rule.is_none() {
            return Ok(());
        }
        if verdict.decision == Decision::Ask && self.state().allowed_in_line.contains(&rule_key(&verdict)) {
            return Ok(());
        }
        let settled = self.settle_as(verdict, Story::Started);
        if settled.is_err() {
            self.state().stopped = true;
        }
        settled
    }

    /// Before a whole line runs in `cwd` (the shell's folder, when known):
    /// what the per-command check cannot see (see [`Policy::prescreen`]).
    /// `Err` is the refusal's message.
    pub fn prescreen(&self, line: &str, cwd: Option<&Path>) -> Result<(), Refusal> {
        match self.policy.prescreen(line, &self.ctx.at(cwd.map(Path::to_path_buf))) {
            Ok(None) => Ok(()),
            Ok(Some(verdict)) => self.settle(verdict),
            // The shell will refuse the line itself, with its own message.
            Err(_) => Ok(()),
        }
    }

    /// A whole line that will run without the shell's hook (the engine
    /// routes some lines over big files to the sandbox's GNU tools): the
    /// prescreen, then each of its commands as written, all literal there.
    pub fn admit_line(&self, line: &str, cwd: Option<&Path>) -> Result<(), Refusal> {
        self.line_start();
        self.prescreen(line, cwd)?;
        // Decided before any of them runs, so none is told as having run.
        for argv in self.policy.written_commands(line).unwrap_or_default() {
            self.settle(self.policy.decide(&argv, &self.ctx))?;
        }
        Ok(())
    }

    /// A line about to run on another machine (`clip NAME 'line'`): what
    /// the rules say of the same line run here. Its folder there is not
    /// known, so relative paths are judged as the hook judges them; a line
    /// that cannot be parsed is judged as the script it is.
    pub fn admit_elsewhere(&self, line: &str) -> Result<(), Refusal> {
        self.prescreen(line, None)?;
        match self.policy.written_commands(line) {
            Ok(commands) => commands.iter().try_for_each(|argv| self.admit(argv, None)),
            Err(_) => self.admit(&["bash".to_string(), "-c".to_string(), line.to_string()], None),
        }
    }

    /// Before one command runs, with its resolved name and expanded
    /// arguments, in `cwd` when known (a remote machine's folder is not).
    /// `Err` is the refusal's message: the command must not run, and
    /// neither may the rest of the line.
    pub fn admit(&self, argv: &[String], cwd: Option<&Path>) -> Result<(), Refusal> {
        if self.state().stopped {
            return Err(Refusal {
                command: argv.join(" "),
                by: RefusedBy::EarlierInLine,
                rule: None,
                message: "[error] policy: the rest of the line did not run: a program it started in the sandbox \
                          was refused (above)\n"
                    .into(),
            });
        }
        let verdict = match cwd {
            // Placed only where the folder can matter: this runs before every command.
            Some(cwd) if self.policy.placing_matters(argv) => {
                self.policy.decide(argv, &self.ctx.at(Some(cwd.to_path_buf())))
            }
            _ => self.policy.decide(argv, &self.ctx),
        };
        self.settle(verdict)?;
        let mut state = self.state();
        state.ran_count += 1;
        if state.ran.len() < RAN_SHOWN {
            state.ran.push(argv.join(" "));
        }
        Ok(())
    }

    fn settle(&self, verdict: Verdict) -> Result<(), Refusal> {
        self.settle_as(verdict, Story::Line)
    }

    fn settle_as(&self, verdict: Verdict, story: Story) -> Result<(), Refusal> {
        let (outcome, answered_by) = match verdict.decision {
            Decision::Allow => return Ok(()),
            Decision::Deny => (Decision::Deny, "rule"),
            Decision::Ask => self.ask(&verdict),
        };
        if outcome == Decision::Allow {
            self.state().allowed_in_line.insert(rule_key(&verdict));
        }
        if let Some(audit) = &self.audit {
            audit(&PolicyEvent {
                command: verdict.command.clone(),
                outcome,
                decision: verdict.decision,
                rule: verdict.rule.as_ref().map(|r| r.id.clone()),
                rule_file: verdict.rule.as_ref().map(|r| r.origin.file.clone()),
                answered_by,
            });
        }
        if outcome == Decision::Allow {
            return Ok(());
        }
        let story = match story {
            Story::Started => {
                "it was started inside the sandbox by a program of the line, which was stopped there with \
                 everything it had started; what ran before is not undone"
                    .to_string()
            }
            Story::Line => {
                let (ran, count) = {
                    let mut state = self.state();
                    (std::mem::take(&mut state.ran), std::mem::take(&mut state.ran_count))
                };
                line_story(&ran, count)
            }
        };
        Err(refusal(&verdict, answered_by, &story))
    }

    /// An `ask`: an earlier "always", a matching `allow` prefix, then the person.
    fn ask(&self, verdict: &Verdict) -> (Decision, &'static str) {
        let key = rule_key(verdict);
        if self.state().always.contains(&key) {
            return (Decision::Allow, "session");
        }
        let words: Vec<String> = verdict.command.split_whitespace().map(String::from).collect();
        if self.policy.allowed_prefixes().iter().any(|prefix| starts_with(&words, prefix)) {
            return (Decision::Allow, "--allow");
        }
        let Some(approver) = &self.approver else { return (Decision::Deny, "no one") };
        let request = Approval {
            command: verdict.command.clone(),
            why: verdict.rule.as_ref().map_or_else(|| default_why(self.policy.default_decision()), |r| r.why.clone()),
            place: verdict.rule.as_ref().map_or_else(|| "the policy's default".into(), |r| r.origin.place(&r.id)),
        };
        match approver.approve(&request) {
            Answer::Once => (Decision::Allow, "person"),
            Answer::Always => {
                self.state().always.insert(key);
                (Decision::Allow, "person")
            }
            Answer::No => (Decision::Deny, "person"),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Where a refused command stood.
enum Story {
    /// A command of the line, before it ran.
    Line,
    /// A program started inside the sandbox by one of the line's programs.
    Started,
}

/// How a rule is remembered across answers (the policy's default when no rule decided).
fn rule_key(verdict: &Verdict) -> String {
    verdict.rule.as_ref().map_or_else(|| "default".to_string(), |r| format!("{}#{}", r.origin.file, r.id))
}

/// What of the line ran before a refusal.
fn line_story(ran: &[String], count: usize) -> String {
    if ran.is_empty() {
        "nothing of the line ran".to_string()
    } else {
        let more = if count > ran.len() { format!(" … and {} more", count - ran.len()) } else { String::new() };
        format!("already ran, not undone: {}{more}; the rest of the line did not run", ran.join("; "))
    }
}

/// `argv` begins with `prefix` (its program by basename).
fn starts_with(argv: &[String], prefix: &[String]) -> bool {
    !prefix.is_empty()
        && argv.len() >= prefix.len()
        && prefix
            .iter()
            .zip(argv)
            .enumerate()
            .all(|(i, (p, a))| if i == 0 { basename(a) == basename(p) } else { a == p })
}

fn default_why(decision: Decision) -> String {
    format!("no rule allows it, and the policy's default is {decision}")
}

/// The message of a refused command: what, why, the rule and how to change
/// it, and what of the line already ran.
fn refusal(verdict: &Verdict, answered_by: &str, story: &str) -> Refusal {
    let command = &verdict.command;
    let (why, place, change) = match &verdict.rule {
        Some(rule) => {
            let change = match rule.origin.scope {
                Scope::Defaults => format!("disable = [\"{}\"] under [policy] in config.toml", rule.id),
                Scope::User | Scope::Workspace => format!("change the rule in {}", rule.origin.file),
            };
            (rule.why.clone(), rule.origin.place(&rule.id), change)
        }
        None => (default_why(Decision::Deny), "the policy's default".into(), "an allow rule for it".into()),
    };
    let head = match (verdict.decision, answered_by) {
        (Decision::Ask, "person") => format!("`{command}` refused by the person: {why}\n  {place}"),
        (Decision::Ask, _) => {
            let words: Vec<&str> = command.split_whitespace().take(3).collect();
            format!(
                "`{command}` needs a person's yes ({why}), and no one is here to answer\n  {place}; to allow it: --allow '{}' for one run, or {change}",
                words.join(" ")
            )
        }
        _ => format!("`{command}` denied: {why}\n  {place}; to turn it off: {change}"),
    };
    let by = match (verdict.decision, answered_by) {
        (Decision::Ask, "person") => RefusedBy::Person,
        (Decision::Ask, _) => RefusedBy::NoOneToAsk,
        _ => RefusedBy::Rule,
    };
    Refusal {
        command: command.clone(),
        by,
        rule: verdict.rule.as_ref().map(|r| r.id.clone()),
        message: format!("[error] policy: {head}\n  {story}\n"),
    }
}

/// A command the policy refused: who said no, and the lines the line's
/// stderr shows (`[error] policy: …`, with what to change).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    /// The command as decided (`rm -rf build`).
    pub command: String,
    /// Who said no.
    pub by: RefusedBy,
    /// The rule's id, when a rule decided (none for the policy's default).
    pub rule: Option<String>,
    /// What the line shows.
    pub message: String,
}

/// Who refused a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusedBy {
    /// A `deny` rule, or the policy's default.
    Rule,
    /// The person, asked.
    Person,
    /// An `ask`, with no one to answer it.
    NoOneToAsk,
    /// Nothing: an earlier program of the same line was refused, and the
    /// rest of the line does not run.
    EarlierInLine,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(approver: Option<Arc<dyn Approver>>) -> Gate {
        let policy = Arc::new(Policy::defaults().expect("the built-in rules load"));
        Gate::new(policy, Context::new("/ws", "/home/user"), GateOptions { approver, audit: None })
    }

    fn argv(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    struct Says(Answer);

    impl Approver for Says {
        fn approve(&self, _: &Approval) -> Answer {
            self.0
        }
    }

    /// Who refused, and which rule, as a caller can match them; the
    /// message is what the line shows.
    #[test]
    fn a_refusal_says_who_refused_and_by_which_rule() {
        let denied = gate(None).admit(&argv("mkfs.ext4 /dev/sdb"), None).unwrap_err();
        assert_eq!((denied.by, denied.rule.as_deref()), (RefusedBy::Rule, Some("mkfs")));
        assert!(denied.message.starts_with("[error] policy: `mkfs.ext4 /dev/sdb` denied"), "{denied}");

        let unanswered = gate(None).admit(&argv("git push --force"), None).unwrap_err();
        assert_eq!((unanswered.by, unanswered.rule.as_deref()), (RefusedBy::NoOneToAsk, Some("git-push-force")));

        let person = gate(Some(Arc::new(Says(Answer::No)))).admit(&argv("git push --force"), None).unwrap_err();
        assert_eq!(person.by, RefusedBy::Person);
        assert!(gate(Some(Arc::new(Says(Answer::Once)))).admit(&argv("git push --force"), None).is_ok());

        let stopped = gate(None);
        assert!(stopped.admit_exec("/sbin/mkfs.ext4", &argv("mkfs.ext4 /dev/sdb"), None).is_err());
        assert_eq!(stopped.admit(&argv("ls"), None).unwrap_err().by, RefusedBy::EarlierInLine);
    }
}
