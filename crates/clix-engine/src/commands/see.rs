//! `see <path>`: show an image to the model. The engine collects what was
//! seen during a line; the agent loop attaches it to the next model call
//! and the MCP server returns it as image content.

use clix_command::{
    AgentCommand, CommandIo, CommandSpec, SeenImages, attach, decode_off_thread, fail, fs_reason, resolve,
};
use clix_shell::{CommandStatus, OWN_READ_LIMIT, async_trait};

pub(crate) struct See {
    spec: CommandSpec,
    seen: SeenImages,
}

impl See {
    pub(crate) fn new(seen: SeenImages) -> Self {
        See {
            spec: CommandSpec {
                name: "see".into(),
                summary: "look at an image file (PNG, JPEG, GIF, WebP); it is attached for you to view".into(),
                usage: "see <image-path>".into(),
                subcommands: vec![],
                details: "Prints the format and size, and attaches the image to your next turn.\n\
                          Images larger than 1568 px on the long side are scaled down.\n\
                          For text files use cat; for other binaries use cat -b (base64)."
                    .into(),
                needs_args: true,
            },
            seen,
        }
    }
}

#[async_trait]
impl AgentCommand for See {
    fn spec(&self) -> &CommandSpec {
        &self.spec
    }

    async fn run(&self, io: CommandIo<'_>) -> bashkit::Result<CommandStatus> {
        let mut failed = false;
        for path in io.args {
            let full = resolve(io.cwd, path);
            // Sized before it is read: a planted huge file costs nothing.
            if let Ok(meta) = io.fs.stat(&full).await
                && meta.size > OWN_READ_LIMIT
            {
                failed = true;
                let message = format!(
                    "[error] see: {path}: {} bytes is more than the {} MB see reads; shrink the image first\n",
                    meta.size,
                    OWN_READ_LIMIT >> 20
                );
                io.stderr.write_all(message.as_bytes()).await?;
                continue;
            }
            let bytes = match io.fs.read_file(&full).await {
                Ok(bytes) => bytes,
                Err(e) => {
                    failed = true;
                    io.stderr.write_all(format!("[error] see: {path}: {}\n", fs_reason(&e)).as_bytes()).await?;
                    continue;
                }
            };
            let size = bytes.len();
            match decode_off_thread(path, bytes).await {
                Ok(image) => {
                    let line = format!(
                        "{path}: {} image, {}x{}, {} bytes; attached for viewing\n",
                        image.mime.trim_start_matches("image/").to_uppercase(),
                        image.width,
                        image.height,
                        size
                    );
                    match attach(&self.seen, image, "see") {
                        Ok(()) => io.stdout.write_all(line.as_bytes()).await?,
                        Err(message) => {
                            failed = true;
                            io.stderr.write_all(message.to_string().as_bytes()).await?;
                        }
                    }
                }
                Err(message) => {
                    failed = true;
                    io.stderr.write_all(message.to_string().as_bytes()).await?;
                }
            }
        }
        if failed { fail(&io, "", 1).await } else { Ok(CommandStatus::success()) }
    }
}
