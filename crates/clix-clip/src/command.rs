//! `clip`: other machines as commands. `clip list`,
//! `clip <name>`, `clip <name> <command…>`, `clip <name> pull <remote>
//! [local]`, `clip <name> push <local> <remote>`. The line sent to an
//! environment is checked by the session's policy as a local line is;
//! local paths of pull and push are workspace paths, through its handle.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clix_command::{
    Added, AgentCommand, CallTime, Capability, CommandIo, CommandSpec, CommandStatus, LineJudge, Parts, SubcommandSpec,
    async_trait, fail,
};
use clix_workspace::Workspace;
use serde_json::json;

use crate::{Clip, ClipConfig, ClipError, Environment, Transfer, UNREACHABLE_EXIT};

/// The person's `[[clip]]` environments as the `clip` command, offered to
/// the model with their list when there are any.
#[async_trait]
impl Capability for ClipConfig {
    async fn add(&self, parts: &Parts<'_>) -> Result<Added, clix_command::CapabilityError> {
        // A call's output is a stage's: held to the line's memory budget.
        let config = ClipConfig { output_cap_bytes: parts.output_cap, ..self.clone() };
        let clip = Clip::new(config)
            .map_err(|e| clix_command::CapabilityError { capability: "clip", problem: e.to_string() })?;
        let clip = Arc::new(clip);
        let section = environments_section(clip.environments());
        let command =
            ClipCommand::new(Arc::clone(&clip), parts.workspace.clone(), parts.judge.clone(), parts.time.clone());
        Ok(Added {
            commands: vec![Arc::new(command)],
            offered: !clip.environments().is_empty(),
            section,
            ..Added::default()
        })
    }
}

/// The environments section of the `run` description and of `help`,
/// empty without environments.
fn environments_section(environments: &[Environment]) -> String {
    if environments.is_empty() {
        return String::new();
    }
    let width = environments.iter().map(|e| e.name.len()).max().unwrap_or(0);
    let mut text = String::from("Environments (clip <name> '<line>' runs there; clip <name> pull|push moves files):\n");
    for e in environments {
        let _ = writeln!(text, "  {:width$}  {}", e.name, e.description);
    }
    text
}

/// `clip` inside `run`.
struct ClipCommand {
    spec: CommandSpec,
    clip: Arc<Clip>,
    workspace: Workspace,
    judge: Option<Arc<dyn LineJudge>>,
    time: CallTime,
}

const USAGE: &str = "clip list | clip <name> | clip <name> <command…> | clip <name> pull <remote> [local] | \
                     clip <name> push <local> <remote>";

impl ClipCommand {
    fn new(clip: Arc<Clip>, workspace: Workspace, judge: Option<Arc<dyn LineJudge>>, time: CallTime) -> Self {
        let subcommands = vec![
            SubcommandSpec::new("list", "clip list [--json]", "each environment, its kind and whether it answers now"),
            SubcommandSpec::new("<name>", "clip <name>", "what it is, where, and an example"),
            SubcommandSpec::new(
                "<name> <command…>",
                "clip <name> [--] <command…>",
                "run the command line there (bash -c), stdin from the pipeline",
            ),
            SubcommandSpec::new(
                "<name> pull",
                "clip <name> pull <remote> [local]",
                "copy a file or folder from there into the workspace",
            ),
            SubcommandSpec::new(
                "<name> push",
                "clip <name> push <local> <remote>",
                "copy a workspace file or folder there",
            ),
        ];
        let names: Vec<&str> = clip.environments().iter().map(|e| e.name.as_str()).collect();
        let summary = if names.is_empty() {
            "other machines (ssh, containers, pods): none configured".to_string()
        } else {
            format!("run command lines on other machines and move files: clip <name> '<line>' ({})", names.join(", "))
        };
        let spec = CommandSpec {
            name: "clip".into(),
            summary,
            usage: USAGE.into(),
            subcommands,
            details: "The line runs on the other side in bash -c, with this stage's stdin:\n\
                      cat local.txt | clip build 'wc -l'. Its exit code is the stage's; stdout and\n\
                      stderr stay apart; the line's time limit ends it there too. Quote the line\n\
                      so its pipes and variables run there, not here. Local paths of pull and push\n\
                      are in the workspace. A word that is also a subcommand runs after --:\n\
                      clip build -- pull --rebase. Environments are declared by a person as\n\
                      [[clip]] entries in clix's config (never by a workspace)."
                .into(),
            needs_args: true,
        };
        ClipCommand { spec, clip, workspace, judge, time }
    }
}

#[async_trait]
impl AgentCommand for ClipCommand {
    fn spec(&self) -> &CommandSpec {
        &self.spec
    }

    async fn run(&self, io: CommandIo<'_>) -> bashkit::Result<CommandStatus> {
        let Some((first, rest)) = io.args.split_first() else {
            return fail(&io, &format!("[error] clip: usage: {USAGE}\n"), clix_command::USAGE_EXIT).await;
        };
        if first == "list" {
            return match rest {
                [] => self.list(&io, false).await,
                [json] if json == "--json" => self.list(&io, true).await,
                _ => fail(&io, "[error] clip list: usage: clip list [--json]\n", clix_command::USAGE_EXIT).await,
            };
        }
        let Some(env) = self.clip.get(first) else {
            return fail(&io, &self.unknown(first), clix_common::exit::NOT_FOUND).await;
        };
        match rest.split_first() {
            None => self.info(&io, env).await,
            Some((flag, [])) if flag == "--help" || flag == "-h" => self.info(&io, env).await,
            Some((sub, args)) if sub == "pull" => self.pull(&io, env, args).await,
            Some((sub, args)) if sub == "push" => self.push(&io, env, args).await,
            Some((dashes, words)) if dashes == "--" => self.run_line(&io, env, words).await,
            Some(_) => self.run_line(&io, env, rest).await,
        }
    }
}

impl ClipCommand {
    /// The navigating error for a name that is not an environment.
    fn unknown(&self, name: &str) -> String {
        let names: Vec<&str> = self.clip.environments().iter().map(|e| e.name.as_str()).collect();
        if names.is_empty() {
            return format!(
                "[error] clip: no environment named {name}: none is configured\n\
                 hint: a person declares them as [[clip]] entries (name, kind, …) in clix's config.toml\n"
            );
        }
        let suggestion = clix_common::names::did_you_mean(name, names.iter().copied())
            .map(|s| format!(" Did you mean {s}?"))
            .unwrap_or_default();
        format!(
            "[error] clip: no environment named {name}.{suggestion}\nAvailable: {}\nhint: clip list\n",
            names.join(", ")
        )
    }

    async fn list(&self, io: &CommandIo<'_>, as_json: bool) -> bashkit::Result<CommandStatus> {
        let envs = self.clip.environments();
        let probes = self.clip.probe_all().await;
        let mut text = String::new();
        if as_json {
            let rows: Vec<_> = envs
                .iter()
                .zip(&probes)
                .map(|(e, p)| {
                    json!({"name": e.name, "kind": e.kind(), "target": e.target_text(), "description": e.description,
                           "reachable": p.reachable, "reason": p.reason, "probe_ms": p.probe_ms, "cached": p.cached})
                })
                .collect();
            text = json!({ "environments": rows }).to_string() + "\n";
        } else if envs.is_empty() {
            text.push_str(
                "(no environments; a person declares them as [[clip]] entries in clix's config.toml, e.g.\n\
                 [[clip]]\nname = \"staging\"\ndescription = \"the staging API host\"\nkind = \"ssh\"\nhost = \"staging.example.com\"\n)\n",
            );
        } else {
            let width = envs.iter().map(|e| e.name.len()).max().unwrap_or(4).max(4);
            let _ = writeln!(text, "{:width$}  {:10}  {:9}  description", "name", "kind", "reachable");
            for (e, p) in envs.iter().zip(&probes) {
                let state = if p.reachable { "yes" } else { "NO" };
                let _ = writeln!(text, "{:width$}  {:10}  {state:9}  {}", e.name, e.kind(), e.description);
                if let Some(reason) = &p.reason {
                    for line in reason.lines() {
                        let _ = writeln!(text, "{:width$}  {line}", "");
                    }
                }
            }
        }
        io.stdout.write_all(text.as_bytes()).await?;
        Ok(CommandStatus::success())
    }

    async fn info(&self, io: &CommandIo<'_>, env: &Environment) -> bashkit::Result<CommandStatus> {
        let probe = self.clip.probe(env).await;
        let name = &env.name;
        let mut text =
            format!("{name} - {}\n", if env.description.is_empty() { "(no description)" } else { &env.description });
        let _ = writeln!(text, "kind:    {}", env.kind());
        let _ = writeln!(text, "target:  {}", env.target_text());
        let _ = writeln!(text, "shell:   {}", env.shell.program());
        match &probe.reason {
            None => {
                let how =
                    if probe.cached { "answered a moment ago".to_string() } else { format!("{} ms", probe.probe_ms) };
                let _ = writeln!(text, "status:  reachable ({how})");
            }
            Some(reason) => {
                let _ = writeln!(text, "status:  NOT reachable: {}", reason.replace('\n', "\n         "));
            }
        }
        let (pull, push) = match env.kind() {
            "local" => ("out/result.txt", "src/ src"),
            _ => ("/var/log/syslog logs/", "build/ /tmp/build"),
        };
        let _ = write!(
            text,
            "examples:\n  clip {name} 'uname -a; df -h .'\n  cat notes.txt | clip {name} 'wc -l'\n  \
             clip {name} pull {pull}\n  clip {name} push {push}\n"
        );
        io.stdout.write_all(text.as_bytes()).await?;
        Ok(CommandStatus::success())
    }

    async fn run_line(
        &self,
        io: &CommandIo<'_>,
        env: &Environment,
        words: &[String],
    ) -> bashkit::Result<CommandStatus> {
        if words.is_empty() {
            let msg = format!("[error] clip {}: usage: clip {} [--] <command…>\n", env.name, env.name);
            return fail(io, &msg, clix_command::USAGE_EXIT).await;
        }
        let line = words.join(" ");
        if let Err(refusal) = self.admit(&line) {
            let msg = format!("[error] clip {}: refused by the policy: {refusal}\n", env.name);
            return fail(io, &msg, clix_common::exit::CANNOT_RUN).await;
        }
        let stdin = clix_command::read_stdin(io).await?;
        let stdin = (!stdin.is_empty()).then_some(stdin.as_slice());
        let limit = self.time.remaining();
        match self.clip.run(env, &line, stdin, limit).await {
            // Cut, it would reach the next stage as whole: the line stops.
            Ok(o) if o.was_capped() => Err(bashkit::Error::ResourceLimit(bashkit::LimitExceeded::BuiltinOutput {
                command: format!("clip {}", env.name),
                limit: self.clip.output_cap(),
            })),
            Ok(o) => {
                io.stdout.write_all(&o.stdout).await?;
                let mut stderr = o.stderr.clone();
                // The remote `timeout` may end it a moment before the local kill.
                let remote_timeout = o.exit_code == clix_common::exit::TIMEOUT
                    && o.duration + std::time::Duration::from_secs(1) >= limit;
                if o.timed_out.is_some() || remote_timeout {
                    stderr.extend_from_slice(format!("{}\n", clix_common::timeout_line(self.time.limit)).as_bytes());
                }
                io.stderr.write_all(&stderr).await?;
                Ok(CommandStatus::with_code(o.exit_code))
            }
            Err(e) => fail(io, &format!("[error] clip {}: {}\n", env.name, e.message(env)), UNREACHABLE_EXIT).await,
        }
    }

    /// The policy's word on a line about to run elsewhere: what it says of
    /// the same line run here.
    fn admit(&self, line: &str) -> Result<(), String> {
        self.judge.as_ref().map_or(Ok(()), |judge| judge.admit_elsewhere(line))
    }

    /// `local` as a workspace path (relative to the workspace), or why not.
    fn workspace_path(&self, io: &CommandIo<'_>, local: &str, verb: &str) -> Result<PathBuf, String> {
        let absolute = clix_command::resolve(io.cwd, local);
        self.workspace.relative(&absolute).map_err(|_| {
            format!(
                "{local} is outside the workspace ({}); clip {verb} only uses workspace paths",
                self.workspace.root().display()
            )
        })
    }

    async fn pull(&self, io: &CommandIo<'_>, env: &Environment, args: &[String]) -> bashkit::Result<CommandStatus> {
        let (remote, local) = match args {
            [remote] => (remote, None),
            [remote, local] => (remote, Some(local.as_str())),
            _ => {
                let msg = format!("[error] clip {0} pull: usage: clip {0} pull <remote> [local]\n", env.name);
                return fail(io, &msg, clix_command::USAGE_EXIT).await;
            }
        };
        // `logs/` names a folder, made if it is not there yet (as scp and cp do with one that is).
        if let Some(folder) = local.filter(|l| l.ends_with('/')) {
            let made = io.fs.mkdir(&clix_command::resolve(io.cwd, folder), true).await;
            if let Err(e) = made {
                let msg = format!("[error] clip {} pull: {folder}: {}\n", env.name, clix_command::fs_reason(&e));
                return fail(io, &msg, 1).await;
            }
        }
        let target = match self.workspace_path(io, local.unwrap_or("."), "pull") {
            Ok(path) => path,
            Err(why) => return fail(io, &format!("[error] clip {} pull: {why}\n", env.name), 1).await,
        };
        let result = self.clip.pull(env, remote, &self.workspace, &target, self.time.remaining()).await;
        self.report(io, env, "pull", result, |t| format!("{}:{remote} → {}", env.name, t.local.display())).await
    }

    async fn push(&self, io: &CommandIo<'_>, env: &Environment, args: &[String]) -> bashkit::Result<CommandStatus> {
        let [local, remote] = args else {
            let msg = format!("[error] clip {0} push: usage: clip {0} push <local> <remote>\n", env.name);
            return fail(io, &msg, clix_command::USAGE_EXIT).await;
        };
        let source = match self.workspace_path(io, local, "push") {
            Ok(path) => path,
            Err(why) => return fail(io, &format!("[error] clip {} push: {why}\n", env.name), 1).await,
        };
        let result = self.clip.push(env, &self.workspace, &source, remote, self.time.remaining()).await;
        self.report(io, env, "push", result, |t| format!("{} → {}:{remote}", t.local.display(), env.name)).await
    }

    async fn report(
        &self,
        io: &CommandIo<'_>,
        env: &Environment,
        verb: &str,
        result: Result<Transfer, ClipError>,
        what: impl Fn(&Transfer) -> String,
    ) -> bashkit::Result<CommandStatus> {
        let t = match result {
            Ok(t) => t,
            Err(e) => {
                let code = if matches!(e, ClipError::Unreachable { .. }) { UNREACHABLE_EXIT } else { 1 };
                return fail(io, &format!("[error] clip {} {verb}: {}\n", env.name, e.message(env)), code).await;
            }
        };
        let files = if t.moved.files == 1 { "1 file".to_string() } else { format!("{} files", t.moved.files) };
        let mut text = format!(
            "{verb}ed {}: {files}, {} bytes ({}) in {} ms\n",
            what(&t),
            t.moved.bytes,
            human(t.moved.bytes),
            t.duration.as_millis()
        );
        if !t.moved.skipped.is_empty() {
            let shown: Vec<String> = t.moved.skipped.iter().take(5).map(|p| display(p)).collect();
            let _ = writeln!(
                text,
                "left out {} symlink(s) or special file(s): {}{}",
                t.moved.skipped.len(),
                shown.join(", "),
                if t.moved.skipped.len() > 5 { ", …" } else { "" }
            );
        }
        io.stdout.write_all(text.as_bytes()).await?;
        Ok(CommandStatus::success())
    }
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

/// `12.3 KB`, `4.0 MB`.
fn human(bytes: u64) -> String {
    match bytes {
        b if b < 1024 => format!("{b} B"),
        b if b < 1 << 20 => format!("{:.1} KB", b as f64 / 1024.0),
        b if b < 1 << 30 => format!("{:.1} MB", b as f64 / (1 << 20) as f64),
        b => format!("{:.1} GB", b as f64 / (1 << 30) as f64),
    }
}
