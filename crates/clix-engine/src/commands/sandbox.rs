//! `sandbox`: run a script or a program in the OS sandbox explicitly, or
//! see what isolation is in force.

use std::sync::Arc;
use std::time::Duration;

use clix_sandbox::Sandbox;
use clix_shell::{
    AgentCommand, CommandIo, CommandSpec, CommandStatus, SubcommandSpec, USAGE_EXIT, async_trait, fail, read_stdin,
    usage_error,
};

use super::os::{Deadline, run_program};

pub(crate) struct SandboxCommand {
    spec: CommandSpec,
    sandbox: Arc<Sandbox>,
    timeout: Duration,
    deadline: Deadline,
}

impl SandboxCommand {
    pub(crate) fn new(sandbox: Arc<Sandbox>, timeout: Duration, deadline: Deadline) -> Self {
        let sub = SubcommandSpec::new;
        let spec = CommandSpec {
            name: "sandbox".into(),
            summary: "run real programs (python3, git, make…) isolated: sandbox bash '<script>' | run <argv…> | status"
                .into(),
            usage: "sandbox bash|run|status".into(),
            subcommands: vec![
                sub("bash", "sandbox bash '<script>' [args…]", "run a whole script in a real GNU bash in the sandbox"),
                sub("run", "sandbox run <program> [args…]", "run one program in the sandbox"),
                sub("status", "sandbox status", "show the isolation, mounts, network and limits in force"),
            ],
            details: "Programs that exist on the host PATH also run in the sandbox when named\n\
                      directly (python3 gen.py | grep x). The sandbox sees the workspace\n\
                      read-write, system folders read-only, an empty HOME, a private /tmp,\n\
                      no network unless enabled, and none of the host's secrets."
                .into(),
            needs_args: true,
        };
        SandboxCommand { spec, sandbox, timeout, deadline }
    }
}

#[async_trait]
impl AgentCommand for SandboxCommand {
    fn spec(&self) -> &CommandSpec {
        &self.spec
    }

    async fn run(&self, io: CommandIo<'_>) -> bashkit::Result<CommandStatus> {
        let (sub, rest) = match self.spec.pick_subcommand(io.args) {
            Ok(picked) => picked,
            Err(line) => return fail(&io, &line, USAGE_EXIT).await,
        };
        let argv: Vec<String> = match sub.name.as_str() {
            "status" => {
                io.stdout.write_all(self.sandbox.status().as_bytes()).await?;
                return Ok(CommandStatus::success());
            }
            "bash" => match rest.split_first() {
                Some((script, args)) => ["bash", "-c", script.as_str(), "bash"]
                    .into_iter()
                    .map(String::from)
                    .chain(args.iter().cloned())
                    .collect(),
                None => return usage_error(&io, "sandbox bash", &sub.usage).await,
            },
            _ if !rest.is_empty() => rest.to_vec(),
            _ => return usage_error(&io, "sandbox run", &sub.usage).await,
        };
        let stdin = read_stdin(&io).await?;
        let stdin = (!stdin.is_empty()).then_some(stdin.as_slice());
        let result = run_program(&self.sandbox, &argv, io.cwd, stdin, &self.deadline, self.timeout).await;
        io.stdout.write_all(result.stdout.as_bytes()).await?;
        io.stderr.write_all(result.stderr.as_bytes()).await?;
        Ok(CommandStatus::with_code(result.exit_code))
    }
}
