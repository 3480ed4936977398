//! `clix hub …`: the very `hub` command the agent has inside `run`, for
//! people, so both always show the same tools, problems and figures.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clix_config::Paths;

use crate::cli::HubFlags;

#[derive(clap::Args)]
pub(crate) struct HubArgs {
    /// The workspace whose .clix/hub is loaded (default: the current folder).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    #[command(flatten)]
    hub: HubFlags,
    /// list [--domain D] [--all] [--json] | info <tool> | search <query> [-n 5] | stats [tool] | check |
    /// call <tool> --json '{…}'
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
    args: Vec<String>,
}

pub(crate) async fn hub(paths: &Paths, mut args: HubArgs) -> Result<ExitCode> {
    let rest = take_session_flags(&mut args)?;
    let mut layers = args.hub.layers();
    if rest.first().is_some_and(|sub| sub == "check") {
        // A person checking wants today's answer: every self-test runs again
        // (and the fresh results are cached for the sessions that follow).
        layers.push(("hub.self_test_ttl_secs", "hub check", toml::Value::Integer(0)));
    }
    let settings = clix_session::load(paths, &layers)?.value;
    crate::cli::run_agent_command(paths, args.workspace, settings, "hub", &rest).await
}

/// `--hub DIR` and `--workspace DIR` after the subcommand (`clix hub check
/// --hub DIR`) belong to clix, not to the hub command; `--domain` there is
/// the hub command's own listing filter.
fn take_session_flags(args: &mut HubArgs) -> Result<Vec<String>> {
    let mut rest = Vec::new();
    let mut words = std::mem::take(&mut args.args).into_iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            "--hub" | "--workspace" => {
                let Some(dir) = words.next() else { bail!("{word} needs a folder") };
                if word == "--hub" {
                    args.hub.dirs.push(dir.into());
                } else {
                    args.workspace = Some(dir.into());
                }
            }
            _ => rest.push(word),
        }
    }
    Ok(rest)
}
