//! `sandbox`: run a script or a program in the OS sandbox explicitly, or
//! see what isolation is in force.

use clix_command::{AgentCommand, CommandIo, CommandSpec, CommandStatus, async_trait, read_stdin};

use super::os::StageRun;
use clix_command::flags::{Arity, Misuse, Operand, Syntax, pick_parsed};

/// A program and its own arguments: the words after the program are its
/// own, flags included, so options (there are none yet) end at the program.
const PROGRAM_ARGS: Operand = Operand { shown: "[args…]", arity: Arity::Rest };
const BASH: Syntax = Syntax {
    name: "sandbox bash",
    operands: &[Operand { shown: "'<script>'", arity: Arity::One }, PROGRAM_ARGS],
    options: &[],
    options_first: true,
    operands_from_stdin: false,
};
const RUN: Syntax = Syntax {
    name: "sandbox run",
    operands: &[Operand { shown: "<program>", arity: Arity::One }, PROGRAM_ARGS],
    options: &[],
    options_first: true,
    operands_from_stdin: false,
};
const STATUS: Syntax = Syntax::plain("sandbox status", &[], &[]);
/// Every subcommand of `sandbox`, in the order `--help` lists them.
const SYNTAXES: [&Syntax; 3] = [&BASH, &RUN, &STATUS];

pub(crate) struct SandboxCommand {
    spec: CommandSpec,
    stage: StageRun,
}

impl SandboxCommand {
    pub(crate) fn new(stage: StageRun) -> Self {
        let summaries = [
            "run a whole script in a real GNU bash in the sandbox",
            "run one program in the sandbox",
            "show the isolation, mounts, network and limits in force",
        ];
        let subcommands = SYNTAXES.iter().zip(summaries).map(|(syntax, summary)| syntax.spec(summary)).collect();
        let spec = CommandSpec {
            name: "sandbox".into(),
            summary: "run real programs (python3, git, make…) isolated: sandbox bash '<script>' | run <argv…> | status"
                .into(),
            usage: "sandbox bash|run|status".into(),
            subcommands,
            details: "Programs that exist on the host PATH also run in the sandbox when named\n\
                      directly (python3 gen.py | grep x). The sandbox sees the workspace\n\
                      read-write, system folders read-only, an empty HOME, a private /tmp,\n\
                      no network unless enabled, and none of the host's secrets."
                .into(),
            needs_args: true,
        };
        SandboxCommand { spec, stage }
    }
}

#[async_trait]
impl AgentCommand for SandboxCommand {
    fn spec(&self) -> &CommandSpec {
        &self.spec
    }

    async fn run(&self, io: CommandIo<'_>) -> bashkit::Result<CommandStatus> {
        let (syntax, sub, parsed) = match pick_parsed(&io, &self.spec, &SYNTAXES).await? {
            Ok(chosen) => chosen,
            Err(status) => return Ok(status),
        };
        let operands = parsed.operands;
        let argv: Vec<String> = match (syntax.subcommand(), operands.split_first()) {
            ("status", _) => {
                io.stdout.write_all(self.stage.sandbox.status().as_bytes()).await?;
                return Ok(CommandStatus::success());
            }
            ("bash", Some((script, args))) => ["bash", "-c", script.as_str(), "bash"]
                .into_iter()
                .map(String::from)
                .chain(args.iter().cloned())
                .collect(),
            (_, Some(_)) => operands,
            // The syntax requires the program (or script).
            (_, None) => return syntax.report(&io, &sub.summary, Misuse::Usage).await,
        };
        let stdin = read_stdin(&io).await?;
        let stdin = (!stdin.is_empty()).then_some(stdin.as_slice());
        let env = clix_command::exported_env(io.env);
        let result = self.stage.run(&argv, io.cwd, stdin, &env).await.map_err(bashkit::Error::ResourceLimit)?;
        io.stdout.write_all(result.stdout.as_bytes()).await?;
        io.stderr.write_all(result.stderr.as_bytes()).await?;
        Ok(CommandStatus::with_code(result.exit_code))
    }
}
