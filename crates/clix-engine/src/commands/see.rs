//! `see <path>`: show an image to the model. The engine collects what was
//! seen during a line; the agent loop attaches it to the next model call
//! and the MCP server returns it as image content.

use std::io::Cursor;
use std::sync::{Arc, Mutex};

use clix_shell::{AgentCommand, CommandIo, CommandSpec, CommandStatus, OWN_READ_LIMIT, async_trait, fail};

use super::{fs_reason, resolve};

/// Longest side sent to a model; larger images are scaled down (the size
/// vision models work at, and what keeps a request small).
pub const MAX_IMAGE_SIDE: u32 = 1568;

/// The most pixels `see` decodes (50 megapixels, ~200 MB as RGBA): a small
/// file can declare a huge image (a 470 KB PNG of 22000x22000 took clix to
/// 1 GB), so the header's size is checked before anything is decoded.
pub(crate) const MAX_IMAGE_PIXELS: u64 = 50_000_000;

/// An image `see` accepted, ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenImage {
    /// The path as the command line gave it.
    pub path: String,
    /// `image/png`, `image/jpeg`, …
    pub mime: String,
    /// Encoded bytes, at most [`MAX_IMAGE_SIDE`] on the long side.
    pub data: Vec<u8>,
    /// Width in pixels of what is sent (after any scaling down).
    pub width: u32,
    /// Height in pixels of what is sent (after any scaling down).
    pub height: u32,
}

/// Images seen during the current line, drained by the engine after it.
pub(crate) type SeenImages = Arc<Mutex<Vec<SeenImage>>>;

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
            // Decoding is CPU-bound work of up to seconds: off the async threads,
            // so other sessions' lines go on meanwhile.
            let (owned, size) = (path.to_string(), bytes.len());
            let decoded = tokio::task::spawn_blocking(move || decode(&owned, &bytes))
                .await
                .unwrap_or_else(|e| Err(format!("[error] see: {path}: the decoder failed: {e}\n")));
            match decoded {
                Ok(image) => {
                    let line = format!(
                        "{path}: {} image, {}x{}, {} bytes; attached for viewing\n",
                        image.mime.trim_start_matches("image/").to_uppercase(),
                        image.width,
                        image.height,
                        size
                    );
                    self.seen.lock().unwrap_or_else(|p| p.into_inner()).push(image);
                    io.stdout.write_all(line.as_bytes()).await?;
                }
                Err(message) => {
                    failed = true;
                    io.stderr.write_all(message.as_bytes()).await?;
                }
            }
        }
        if failed { fail(&io, "", 1).await } else { Ok(CommandStatus::success()) }
    }
}

/// Checks that `bytes` are an image we can show, and scales it down if needed.
pub(crate) fn decode(path: &str, bytes: &[u8]) -> Result<SeenImage, String> {
    let not_image = || format!("[error] not an image file: {path} (use cat to read text files)\n");
    let kind = infer::get(bytes).filter(|k| k.matcher_type() == infer::MatcherType::Image).ok_or_else(not_image)?;
    let format = image::ImageFormat::from_mime_type(kind.mime_type()).ok_or_else(|| {
        format!("[error] see: {path}: {} images are not supported; convert it to PNG\n", kind.extension())
    })?;
    let cannot = |e: image::ImageError| format!("[error] see: {path}: cannot decode the image: {e}\n");
    let reader = || image::ImageReader::with_format(Cursor::new(bytes), format);
    let (width, height) = reader().into_dimensions().map_err(cannot)?;
    let pixels = u64::from(width) * u64::from(height);
    if pixels > MAX_IMAGE_PIXELS {
        return Err(format!(
            "[error] see: {path}: {width}x{height} is {} megapixels, more than the {} see decodes; \
             make a smaller copy first (e.g. python3 with Pillow: Image.open(p).reduce(8).save('small.png'))\n",
            pixels / 1_000_000,
            MAX_IMAGE_PIXELS / 1_000_000
        ));
    }
    let decoded = reader().decode().map_err(cannot)?;
    let (width, height) = (decoded.width(), decoded.height());
    if width.max(height) <= MAX_IMAGE_SIDE {
        return Ok(SeenImage { path: path.into(), mime: kind.mime_type().into(), data: bytes.to_vec(), width, height });
    }
    let scaled = decoded.resize(MAX_IMAGE_SIDE, MAX_IMAGE_SIDE, image::imageops::FilterType::Triangle);
    let mut data = Vec::new();
    scaled
        .write_to(&mut Cursor::new(&mut data), image::ImageFormat::Png)
        .map_err(|e| format!("[error] see: {path}: cannot scale the image down: {e}\n"))?;
    Ok(SeenImage { path: path.into(), mime: "image/png".into(), data, width: scaled.width(), height: scaled.height() })
}
