//! `clix policy check|list`, and the terminal that answers the policy's `ask`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clix_config::Paths;
use clix_policy::{Answer, Approval, Approver, Decision, LineEntry};

use clix_terminal::outln;

#[derive(clap::Args)]
pub(crate) struct PolicyArgs {
    #[command(subcommand)]
    action: PolicyAction,
    /// The workspace whose `.clix/policy.toml` counts too (default: the current folder).
    #[arg(long, value_name = "DIR", global = true)]
    workspace: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(clap::Subcommand)]
enum PolicyAction {
    /// For each command the line would run: the decision and the rule behind
    /// it, without running anything. Exit 0 when all are allowed, 1 when one
    /// would be asked about or denied, 2 when the line does not parse.
    Check {
        /// The command line, quoted as one argument.
        #[arg(value_name = "LINE", allow_hyphen_values = true)]
        line: String,
    },
    /// Every rule in force, where it came from, and what it decides.
    List,
}

/// The person at this terminal, asked on `/dev/tty` (stdout may be piped).
pub(crate) struct Terminal;

impl Approver for Terminal {
    fn approve(&self, request: &Approval) -> Answer {
        match clix_terminal::ask::ask_person(&prompt(request)).as_deref() {
            Some("y" | "yes") => Answer::Once,
            Some("a" | "always") => Answer::Always,
            _ => Answer::No,
        }
    }
}

/// The question put to the person. Every control and text-direction
/// character is shown escaped: an argument holding `\r\x1b[2K\x1b[1A` would
/// otherwise rewrite the terminal and hide the real command and its reason.
fn prompt(request: &Approval) -> String {
    format!(
        "\nclix policy asks before running:\n  {}\n  why: {}\n  ({})\nrun it? [y] once, [a] always this session, [n] no: ",
        clix_terminal::text::escaped(&request.command),
        clix_terminal::text::escaped(&request.why),
        clix_terminal::text::escaped(&request.place)
    )
}

/// `clix policy …`.
pub(crate) async fn policy(paths: &Paths, args: PolicyArgs) -> Result<ExitCode> {
    let settings = clix_session::load(paths, &[])?.value;
    let workspace = crate::cli::workspace_or_cwd(args.workspace)?;
    let engine = crate::cli::session(paths, settings, &workspace, false).engine().await?;
    let gate = engine.policy().context("this session has no policy")?;
    match args.action {
        // Decided where `run` would run it: the shell starts in the workspace.
        PolicyAction::Check { line } => match gate.check_line(&line, Some(&engine.shell().cwd())) {
            Ok(entries) => check(&entries, args.json),
            Err(e) => {
                eprintln!("clix policy: the line does not parse, so it would not run: {e}");
                Ok(crate::cli::exit_code(clix_common::exit::USAGE))
            }
        },
        PolicyAction::List => list(gate.policy(), args.json),
    }
}

fn check(entries: &[LineEntry], json: bool) -> Result<ExitCode> {
    if json {
        outln(serde_json::to_string_pretty(entries)?)?;
    } else {
        for entry in entries {
            let (decision, reason) = match &entry.verdict {
                None => ("?".to_string(), "decided when it runs: the command's name is computed".to_string()),
                Some(v) => {
                    let reason = match &v.rule {
                        Some(rule) => format!("{}: {}", rule.origin.place(&rule.id), rule.why),
                        None => "no rule matches".to_string(),
                    };
                    let note =
                        if v.command != entry.what { format!(" (through `{}`)", v.command) } else { String::new() };
                    (v.decision.to_string(), format!("{reason}{note}"))
                }
            };
            let again = if entry.decided_again_at_run_time { " [checked again when it runs]" } else { "" };
            outln(format!("{decision:<6} {}  — {reason}{again}", entry.what))?;
        }
    }
    let refused = entries.iter().any(|e| e.verdict.as_ref().is_some_and(|v| v.decision != Decision::Allow));
    Ok(if refused { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn list(policy: &clix_policy::Policy, json: bool) -> Result<ExitCode> {
    if json {
        let rules: Vec<serde_json::Value> = policy
            .rules()
            .iter()
            .map(|r| {
                serde_json::json!({
                    "id": r.id, "decision": r.decision, "why": r.why, "from": r.origin.file,
                    "scope": r.origin.scope, "matches": r.describe(), "rule": r.spec,
                })
            })
            .collect();
        let all = serde_json::json!({
            "rules": rules,
            "default": policy.default_decision(),
            "allow": policy.allowed_prefixes().iter().map(|p| p.join(" ")).collect::<Vec<_>>(),
            "warnings": policy.warnings(),
        });
        outln(serde_json::to_string_pretty(&all)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    for rule in policy.rules() {
        outln(format!(
            "{:<6} {}  — {}\n       {}; from {}",
            rule.decision,
            rule.id,
            rule.describe(),
            rule.why,
            rule.origin.file
        ))?;
    }
    outln(format!("default for commands no rule matches: {}", policy.default_decision()))?;
    for prefix in policy.allowed_prefixes() {
        outln(format!("asks let through without asking: {}", prefix.join(" ")))?;
    }
    for warning in policy.warnings() {
        outln(format!("warning: {warning}"))?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 28, finding 8: a line could erase itself from the question.
    #[test]
    fn the_question_shows_control_characters_escaped() {
        let request = Approval {
            command: "rm -rf /srv/data \r\u{1b}[2K\u{1b}[1Aecho harmless\u{1b}[8m".into(),
            why: "deletes \u{202e}txt.exe".into(),
            place: "rule `x` in defaults".into(),
        };
        let shown = prompt(&request);
        assert!(shown.contains("rm -rf /srv/data \\r\\u{1b}[2K\\u{1b}[1Aecho harmless\\u{1b}[8m"), "{shown}");
        assert!(shown.contains("deletes \\u{202e}txt.exe"), "{shown}");
        let raw: Vec<char> = shown.chars().filter(|c| c.is_control() && *c != '\n').collect();
        assert!(raw.is_empty(), "raw control characters left: {raw:?}");
    }
}
