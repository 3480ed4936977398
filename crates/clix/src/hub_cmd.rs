//! `clix hub …`: the hub's tools and the problems of its manifests, for people.
//! Loading and checking live in `clix-hub`; this module only prints.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use clix_config::Paths;
use clix_hub::{Hub, LoadOptions, hub_sources, load_hub, usage};
use serde_json::json;

#[derive(clap::Args)]
pub struct HubArgs {
    #[command(subcommand)]
    action: HubAction,
    /// Another hub folder to load tools from (repeatable; searched after the
    /// workspace's .clix/hub and the config folder's hub/, before CLIX_HUB_PATH).
    #[arg(long, value_name = "DIR", global = true)]
    hub: Vec<PathBuf>,
    /// The workspace whose .clix/hub is loaded (default: the current folder).
    #[arg(long, value_name = "DIR", global = true)]
    workspace: Option<PathBuf>,
}

#[derive(Subcommand)]
enum HubAction {
    /// The tools that loaded: name, version, domain, description.
    List {
        /// Machine-readable output: {tools, problems}.
        #[arg(long)]
        json: bool,
    },
    /// One tool: its usage, manifest and program.
    Info {
        /// The tool's name.
        tool: String,
    },
    /// Check every manifest; exits 1 listing every problem (file, field, fix).
    Check,
}

pub fn hub(paths: &Paths, args: HubArgs) -> Result<ExitCode> {
    let workspace = crate::cli::workspace_or_cwd(args.workspace)?;
    let env_path = std::env::var_os("CLIX_HUB_PATH");
    let sources = hub_sources(Some(&workspace), &paths.config_dir, &args.hub, env_path.as_deref());
    let hub = load_hub(&sources, &LoadOptions::default());
    match args.action {
        HubAction::List { json } => list(&hub, json),
        HubAction::Info { tool } => info(&hub, &tool),
        HubAction::Check => Ok(check(&hub)),
    }
}

fn list(hub: &Hub, as_json: bool) -> Result<ExitCode> {
    if as_json {
        let tools: Vec<_> = hub
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.manifest.name,
                    "version": t.manifest.version,
                    "description": t.manifest.description,
                    "domain": t.manifest.domain,
                    "manifest_path": t.manifest_path,
                    "program": t.program,
                    "manifest": t.manifest,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&json!({"tools": tools, "problems": hub.problems}))?);
        return Ok(ExitCode::SUCCESS);
    }
    if hub.tools.is_empty() {
        println!("(no tools)");
    }
    let width = hub.tools.iter().map(|t| t.manifest.name.len()).max().unwrap_or(0);
    for t in &hub.tools {
        let m = &t.manifest;
        let domain = m.domain.as_deref().map(|d| format!(" [{d}]")).unwrap_or_default();
        println!("{:width$}  {}{domain}  {}", m.name, m.version, m.description);
    }
    if !hub.problems.is_empty() {
        eprintln!("{} problem(s) in the hub's manifests: see `clix hub check`", hub.problems.len());
    }
    Ok(ExitCode::SUCCESS)
}

fn info(hub: &Hub, name: &str) -> Result<ExitCode> {
    let Some(tool) = hub.get(name) else {
        let names: Vec<&str> = hub.tools.iter().map(|t| t.manifest.name.as_str()).collect();
        eprintln!(
            "clix hub: no tool `{name}` (tools: {})",
            if names.is_empty() { "none".into() } else { names.join(", ") }
        );
        for p in hub.problems.iter().filter(|p| p.file.to_string_lossy().contains(name)) {
            eprintln!("  {p}");
        }
        return Ok(ExitCode::from(1));
    };
    print!("{}", usage(&tool.manifest));
    println!("\nmanifest: {}\nprogram:  {}", tool.manifest_path.display(), tool.program.display());
    Ok(ExitCode::SUCCESS)
}

fn check(hub: &Hub) -> ExitCode {
    for p in &hub.problems {
        println!("{p}");
    }
    if hub.problems.is_empty() {
        println!("ok: {} tool(s), no problems", hub.tools.len());
        ExitCode::SUCCESS
    } else {
        let mut files: Vec<_> = hub.problems.iter().map(|p| &p.file).collect();
        files.sort();
        files.dedup();
        println!("{} problem(s) in {} file(s); {} tool(s) loaded", hub.problems.len(), files.len(), hub.tools.len());
        ExitCode::from(1)
    }
}
