//! `clix policy check|list`, and the terminal that answers the policy's `ask`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clix_config::Paths;

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

fn check(entries: &[clix_policy::LineEntry], json: bool) -> Result<ExitCode> {
    if json {
        outln(serde_json::to_string_pretty(entries)?)?;
    }
    let (lines, refused) = clix_terminal::policy_view::check_lines(entries);
    if !json {
        for line in lines {
            outln(line)?;
        }
    }
    Ok(if refused { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn list(policy: &clix_policy::Policy, json: bool) -> Result<ExitCode> {
    if json {
        outln(serde_json::to_string_pretty(&clix_terminal::policy_view::rules_json(policy))?)?;
    } else {
        clix_terminal::out(clix_terminal::policy_view::rules_text(policy).as_bytes())?;
    }
    Ok(ExitCode::SUCCESS)
}
