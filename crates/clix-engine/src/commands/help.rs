//! `help`: the command list, or one command's full help.

use clix_shell::{AgentCommand, CommandIo, CommandSpec, CommandStatus, async_trait, fail};

use crate::catalog::{SharedCatalog, catalog_of};

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
                      full help; for standard commands it is the same as `<command> --help`."
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
        let hub = catalog.hub_section();
        if !hub.is_empty() {
            text.push('\n');
            text.push_str(&hub);
        }
        let environments = catalog.clip_section();
        if !environments.is_empty() {
            text.push('\n');
            text.push_str(&environments);
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
        let text = match io.args.first() {
            None => self.overview(),
            Some(name) => match catalog.agent_command(name) {
                Some(spec) => spec.help(),
                // Standard commands document themselves; send the model there.
                None if catalog.standard.iter().any(|n| n == name) => {
                    let msg = format!("[error] help: {name} is a standard command. Use: {name} --help\n");
                    return fail(&io, &msg, 1).await;
                }
                None => {
                    let msg = format!("[error] help: no command named {name}. Use: help (lists every command)\n");
                    return fail(&io, &msg, 1).await;
                }
            },
        };
        io.stdout.write_all(text.as_bytes()).await?;
        Ok(CommandStatus::success())
    }
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
