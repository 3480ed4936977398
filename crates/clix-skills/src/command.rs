//! `skill`: Agent Skills at their three levels. Level 0 is the list in the
//! `run` tool's description; `skill NAME` prints a skill's `SKILL.md`
//! (level 1); `skill NAME files|cat|run` reach its other files (level 2),
//! each through the skill folder's handle, and run its scripts only in the
//! OS sandbox, never on the host: a workspace's skill is a cloned
//! repository's code.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clix_command::{
    Added, AgentCommand, Capability, CommandIo, CommandSpec, CommandStatus, Parts, StageRunner, USAGE_EXIT,
    async_trait, fail, read_stdin,
};
use clix_sandbox::SandboxMode;
use clix_workspace::{Kind, OWN_READ_LIMIT};

use crate::{Origin, Skill, Skills, SkillsConfig};

/// Exit code of a script that cannot run here (no sandbox, not executable).
const CANNOT_RUN: i32 = clix_common::exit::CANNOT_RUN;
/// Most entries `skill NAME files` lists: a skill is a handful of files.
const MAX_LISTED: usize = 500;
/// Interpreters for a script without its executable bit, by extension.
const INTERPRETERS: &[(&str, &str)] = &[
    ("sh", "sh"),
    ("bash", "bash"),
    ("py", "python3"),
    ("js", "node"),
    ("mjs", "node"),
    ("rb", "ruby"),
    ("pl", "perl"),
];

/// The session's skills as the `skill` command: level 0 in the `run` tool's
/// description (`{skills}`), a skill that did not load as a notice.
#[async_trait]
impl Capability for SkillsConfig {
    async fn add(&self, parts: &Parts<'_>) -> Result<Added, clix_command::CapabilityError> {
        let skills = Arc::new(Skills::find(self, Some(&**parts.workspace)));
        let mut notices: Vec<String> = skills
            .problems()
            .iter()
            .map(|p| format!("skill {} did not load: {}; {}", p.path.display(), p.what, p.fix))
            .collect();
        notices.extend(skills.clashes().iter().cloned());
        let level0 = skills.level0(self.level0_bytes);
        Ok(Added {
            commands: vec![Arc::new(SkillCommand::new(skills, parts.stages.clone()))],
            // `skill` is not offered to the model without skills: there is nothing to find.
            offered: !level0.is_empty(),
            placeholder: Some(("skills", level0)),
            notices,
            ..Added::default()
        })
    }
}

struct SkillCommand {
    spec: CommandSpec,
    skills: Arc<Skills>,
    /// How a script runs: `None` when the engine has no OS tier.
    stage: Option<Arc<dyn StageRunner>>,
}

impl SkillCommand {
    fn new(skills: Arc<Skills>, stage: Option<Arc<dyn StageRunner>>) -> Self {
        let spec = CommandSpec {
            name: "skill".into(),
            summary:
                "a task's instructions and scripts (Agent Skills): skill [<name> [files | cat <path> | run <script>]]"
                    .into(),
            usage: "skill [<name> [files | cat <path> | run <script> [args…]]]".into(),
            subcommands: Vec::new(),
            details: "skill                              every skill: name, whose (person or workspace), description\n\
                      skill <name>                       its SKILL.md: how to do the task\n\
                      skill <name> files                 the skill's files\n\
                      skill <name> cat <path>            one of its files (a path inside the skill's folder)\n\
                      skill <name> run <script> [args…]  a script of the skill, in the sandbox, from the current\n\
                      \x20                                  folder; stdin and pipes work as for any program\n\
                      A person's skills (the config folder's skills/) win over a workspace's (.clix/skills/,\n\
                      .agents/skills/); a workspace's scripts are untrusted and, like every script, run sandboxed."
                .into(),
            needs_args: false,
        };
        SkillCommand { spec, skills, stage }
    }
}

#[async_trait]
impl AgentCommand for SkillCommand {
    fn spec(&self) -> &CommandSpec {
        &self.spec
    }

    async fn run(&self, io: CommandIo<'_>) -> bashkit::Result<CommandStatus> {
        let Some((name, rest)) = io.args.split_first() else {
            io.stdout.write_all(list(&self.skills).as_bytes()).await?;
            return Ok(CommandStatus::success());
        };
        if rest.first().is_some_and(|w| w == "--help" || w == "-h") {
            io.stdout.write_all(self.spec.help().as_bytes()).await?;
            return Ok(CommandStatus::success());
        }
        let Some(skill) = self.skills.get(name) else {
            return fail(&io, &unknown(&self.skills, name), 1).await;
        };
        let usage = |why: &str| format!("[error] skill {name}: {why}. usage: {}\n", self.spec.usage);
        match rest {
            [] => level1(&io, skill).await,
            [sub] if sub == "files" => {
                io.stdout.write_all(files(skill).as_bytes()).await?;
                Ok(CommandStatus::success())
            }
            [sub, path] if sub == "cat" => cat(&io, skill, path).await,
            [sub, script, args @ ..] if sub == "run" => self.run_script(&io, skill, script, args).await,
            [sub, ..] if matches!(sub.as_str(), "files" | "cat" | "run") => {
                fail(&io, &usage(&format!("wrong words after {sub}")), USAGE_EXIT).await
            }
            [sub, ..] => fail(&io, &usage(&format!("no subcommand {sub}; use files, cat or run")), USAGE_EXIT).await,
        }
    }
}

/// Every skill, then what went wrong finding them.
fn list(skills: &Skills) -> String {
    let mut out = String::new();
    if skills.all().is_empty() {
        out.push_str(
            "(no skills: a skill is a folder with SKILL.md, in your config folder's skills/ or the workspace's \
             .clix/skills/ or .agents/skills/)\n",
        );
    }
    let width = skills.all().iter().map(|s| s.name.len()).max().unwrap_or(0);
    for skill in skills.all() {
        let description = skill.description.split_whitespace().collect::<Vec<_>>().join(" ");
        let _ = writeln!(out, "{:width$}  {:9}  {description}", skill.name, skill.origin.label());
    }
    for clash in skills.clashes() {
        let _ = writeln!(out, "warning: {clash}");
    }
    for problem in skills.problems() {
        let _ = writeln!(out, "problem: {problem}");
    }
    out
}

/// Why there is no skill `name`: it did not load, or the near name and the list.
fn unknown(skills: &Skills, name: &str) -> String {
    let failed: Vec<String> = skills
        .problems()
        .iter()
        .filter(|p| p.path.components().any(|c| c.as_os_str() == name))
        .map(|p| format!("problem: {p}\n"))
        .collect();
    if !failed.is_empty() {
        return format!("[error] skill: {name} did not load\n{}", failed.concat());
    }
    let near = clix_common::names::did_you_mean(name, skills.all().iter().map(|s| s.name.as_str()))
        .map(|n| format!(" Did you mean {n}?"))
        .unwrap_or_default();
    format!("[error] skill: no skill {name}.{near}\nhint: skill lists every skill\n")
}

/// `skill NAME`: its `SKILL.md`, then how to reach the rest of it.
async fn level1(io: &CommandIo<'_>, skill: &Skill) -> bashkit::Result<CommandStatus> {
    let text = match skill.skill_md() {
        Ok(text) => text,
        Err(e) => return fail(io, &format!("[error] skill {}: {e}\n", skill.name), 1).await,
    };
    io.stdout.write_all(&text).await?;
    let name = &skill.name;
    let footer = format!(
        "\n[skill {name}: its files: skill {name} files; read one: skill {name} cat <path>; \
         run a script: skill {name} run <script> [args…]]\n"
    );
    io.stdout.write_all(footer.as_bytes()).await?;
    Ok(CommandStatus::success())
}

/// `skill NAME files`: every file below the skill's folder (sorted), with
/// its size; a symlink is shown, never followed.
fn files(skill: &Skill) -> String {
    let mut rows: Vec<(PathBuf, String)> = Vec::new();
    let mut pending = vec![PathBuf::from(".")];
    let mut more = false;
    while let Some(dir) = pending.pop() {
        let Ok(entries) = skill.folder.read_dir(&dir) else { continue };
        for (entry, meta) in entries {
            if rows.len() == MAX_LISTED {
                more = true;
                break;
            }
            let path = if dir == Path::new(".") { PathBuf::from(&entry) } else { dir.join(&entry) };
            let note = match meta.kind {
                Kind::Dir => {
                    pending.push(path);
                    continue;
                }
                Kind::File if meta.mode & 0o111 != 0 => {
                    format!("{} bytes, runs: skill {} run {}", meta.len, skill.name, path.display())
                }
                Kind::File => format!("{} bytes", meta.len),
                Kind::Symlink => "a symlink: not followed".into(),
                _ => continue,
            };
            rows.push((path, note));
        }
    }
    rows.sort();
    let mut out: String = rows.iter().map(|(path, note)| format!("{}  ({note})\n", path.display())).collect();
    if more {
        let _ = writeln!(out, "(only the first {MAX_LISTED} entries are listed)");
    }
    out
}

/// `skill NAME cat PATH`: one file of the skill, through its folder's handle.
async fn cat(io: &CommandIo<'_>, skill: &Skill, path: &str) -> bashkit::Result<CommandStatus> {
    match skill.folder.read(Path::new(path), OWN_READ_LIMIT) {
        Ok(bytes) => {
            io.stdout.write_all(&bytes).await?;
            Ok(CommandStatus::success())
        }
        Err(e) => {
            let name = &skill.name;
            let e = in_skill(&e);
            let line = format!("[error] skill {name} cat: {e}\nhint: skill {name} files lists its files\n");
            fail(io, &line, 1).await
        }
    }
}

impl SkillCommand {
    /// `skill NAME run SCRIPT ARGS…`: the script, a regular file of the
    /// skill's folder, run in the sandbox from the shell's current folder.
    /// A person's skill folder is mounted read-only for the run; a
    /// workspace's is not (a mount would follow a symlink swapped in on the
    /// host): its script is reached through the workspace's own mount.
    async fn run_script(
        &self,
        io: &CommandIo<'_>,
        skill: &Skill,
        script: &str,
        args: &[String],
    ) -> bashkit::Result<CommandStatus> {
        let who = format!("skill {} run", skill.name);
        let Some(stage) = &self.stage else {
            let line = format!(
                "[error] {who}: no sandbox: the OS tier is off (sandbox.mode = \"off\"), and skill scripts run only \
                 in the sandbox. Set sandbox.mode = \"bwrap\" (apt-get install bubblewrap)\n"
            );
            return fail(io, &line, CANNOT_RUN).await;
        };
        if stage.sandbox().settings().mode == SandboxMode::Host {
            let line = format!(
                "[error] {who}: sandbox.mode = \"host\" would run it unsandboxed; skill scripts run only in \
                 bubblewrap. Set sandbox.mode = \"bwrap\" (apt-get install bubblewrap)\n"
            );
            return fail(io, &line, CANNOT_RUN).await;
        }
        let argv = match script_argv(skill, script, args) {
            Ok(argv) => argv,
            Err((why, code)) => {
                let hint = format!("hint: skill {} files lists its files\n", skill.name);
                return fail(io, &format!("[error] {who}: {why}\n{hint}"), code).await;
            }
        };
        let read_only = match skill.origin {
            Origin::Person => vec![skill.folder.root().to_path_buf()],
            Origin::Workspace => Vec::new(),
        };
        let mut env = clix_command::exported_env(io.env);
        env.push(("CLIX_SKILL_DIR".into(), skill.folder.root().display().to_string()));
        let stdin = read_stdin(io).await?;
        let stdin = (!stdin.is_empty()).then_some(stdin.as_slice());
        let mut result =
            stage.run(&argv, io.cwd, stdin, &env, &read_only).await.map_err(bashkit::Error::ResourceLimit)?;
        if result.exit_code == CANNOT_RUN && result.stderr.starts_with("[error] sandbox unavailable") {
            let note = "clix: skill scripts never run unsandboxed: sandbox.mode = \"host\" is refused for them\n";
            result.stderr = format!("{}{note}", result.stderr).into();
        }
        io.stdout.write_all(result.stdout.as_bytes()).await?;
        io.stderr.write_all(result.stderr.as_bytes()).await?;
        Ok(CommandStatus::with_code(result.exit_code))
    }
}

/// The argv that runs `script` of `skill`: the file itself when it is
/// executable, else its interpreter by extension; or why it cannot run.
fn script_argv(skill: &Skill, script: &str, args: &[String]) -> Result<Vec<String>, (String, i32)> {
    let not_found = clix_common::exit::NOT_FOUND;
    let rel = skill.folder.relative(Path::new(script)).map_err(|e| (in_skill(&e), not_found))?;
    let entry = skill.folder.symlink_metadata(&rel).map_err(|e| (in_skill(&e), not_found))?;
    if entry.kind != Kind::File {
        return Err((format!("{script} is not a regular file of the skill; run a script file"), CANNOT_RUN));
    }
    let path = skill.folder.root().join(&rel).display().to_string();
    let program = if entry.mode & 0o111 != 0 {
        vec![path]
    } else {
        let extension = rel.extension().and_then(|e| e.to_str()).unwrap_or("");
        let Some((_, interpreter)) = INTERPRETERS.iter().find(|(ext, _)| *ext == extension) else {
            return Err((
                format!(
                    "{script} is not executable, and clix knows no interpreter for its extension; the skill's \
                     owner can give it a #! line and chmod +x it"
                ),
                CANNOT_RUN,
            ));
        };
        vec![interpreter.to_string(), path]
    };
    Ok(program.into_iter().chain(args.iter().cloned()).collect())
}

/// An error of the skill folder's handle, which words its root as "the
/// workspace", said of the skill's folder it is.
fn in_skill(error: &std::io::Error) -> String {
    error.to_string().replace("the workspace", "the skill's folder")
}
