//! `help`: the command list, or one command's full help.

use clix_command::{AgentCommand, CommandIo, CommandSpec, CommandStatus, async_trait, fail};

use crate::catalog::{Catalog, SharedCatalog, catalog_of};

pub(crate) struct Help {
    spec: CommandSpec,
    catalog: SharedCatalog,
}

impl Help {
    pub(crate) fn new(catalog: SharedCatalog) -> Self {
        let spec = CommandSpec {
            name: "help".into(),
            summary: "list every command, or show the full help of one".into(),
            usage: "help [command]".into(),
            subcommands: vec![],
            details: "With no argument, lists our agent commands with a summary each and the\n\
                      standard Unix commands by name. `help <command>` prints that command's\n\
                      full help: for a standard command its own `--help`, or its usage when it\n\
                      has none."
                .into(),
            needs_args: false,
        };
        Help { spec, catalog }
    }

    fn overview(&self) -> String {
        let catalog = catalog_of(&self.catalog);
        let width = catalog.agent.iter().map(|s| s.name.len()).max().unwrap_or(0);
        let mut text = String::from("Agent commands:\n");
        for spec in &catalog.agent {
            text.push_str(&format!("  {:width$}  {}\n", spec.name, spec.summary));
        }
        for section in &catalog.sections {
            text.push('\n');
            text.push_str(section);
        }
        let mcp = catalog.placeholder("mcp");
        if !mcp.is_empty() {
            text.push('\n');
            text.push_str(mcp);
        }
        text.push_str("\nStandard commands (bash builtins and Unix tools):\n");
        text.push_str(&wrap(&catalog.standard.join(", "), 78, "  "));
        text.push_str("\nMore: help <command>, or <command> --help\n");
        text
    }
}

#[async_trait]
impl AgentCommand for Help {
    fn spec(&self) -> &CommandSpec {
        &self.spec
    }

    async fn run(&self, io: CommandIo<'_>) -> bashkit::Result<CommandStatus> {
        let catalog = catalog_of(&self.catalog);
        let Some(name) = io.args.first() else {
            io.stdout.write_all(self.overview().as_bytes()).await?;
            return Ok(CommandStatus::success());
        };
        let text = match catalog.agent_command(name) {
            Some(spec) => Some(spec.help()),
            None if catalog.standard.contains(name) => clix_shell::builtin_help(name).await,
            None => None,
        };
        match text {
            Some(text) => {
                io.stdout.write_all(text.as_bytes()).await?;
                Ok(CommandStatus::success())
            }
            None => fail(&io, &unknown(name, &catalog), 1).await,
        }
    }
}

/// `help NAME` for a name it has nothing for: the nearest names, then
/// where to look.
fn unknown(name: &str, catalog: &Catalog) -> String {
    let ours = catalog.agent.iter().chain(&catalog.unlisted).chain(&catalog.tools).map(|s| s.name.as_str());
    let mut names: Vec<&str> = ours.chain(catalog.standard.iter().map(String::as_str)).collect();
    names.sort_unstable();
    let near = clix_common::names::nearest(name, names);
    let mut msg = format!("[error] help: no command named {name}\n");
    if near.is_empty() {
        // A program of the sandbox (python3, git…) is in no list.
        msg.push_str(&format!("Use: help (lists every command); a program outside that list: {name} --help\n"));
    } else {
        msg.push_str(&format!("did you mean: {}?\nUse: help (lists every command)\n", near.join(", ")));
    }
    msg
}

/// Greedy word wrap of a comma-separated list.
fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::from(indent);
    for word in text.split(' ') {
        if line.len() + word.len() + 1 > width && line.len() > indent.len() {
            out.push_str(line.trim_end());
            out.push('\n');
            line = String::from(indent);
        }
        line.push_str(word);
        line.push(' ');
    }
    if line.len() > indent.len() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
