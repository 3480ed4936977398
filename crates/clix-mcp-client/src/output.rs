//! A tool's result as a command's: `structuredContent` as JSON on stdout,
//! text content as text, images apart (for vision), and `isError` as exit 1
//! with its text on stderr.

use base64::Engine as _;
use clix_common::exit;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// What one invocation of a server's command gave: the bytes and code of
/// a command, and the images for a model's eyes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallResult {
    /// For the pipe: the structured content as JSON, else the text.
    pub stdout: Vec<u8>,
    /// A tool's error text, a usage error, a server that failed.
    pub stderr: Vec<u8>,
    /// 0; 1 for a tool's error or a failed server; 2 for a usage error.
    pub exit_code: i32,
    /// Images the tool returned, decoded.
    pub images: Vec<Image>,
}

/// One image of a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// Its MIME type (`image/png`).
    pub mime: String,
    /// Its bytes.
    pub data: Vec<u8>,
}

impl CallResult {
    /// Text on stdout, exit 0 (a help page).
    pub fn text(text: String) -> Self {
        CallResult { stdout: text.into_bytes(), ..Default::default() }
    }

    /// `message` on stderr with `exit_code`.
    pub fn error(exit_code: i32, message: String) -> Self {
        let mut stderr = message.into_bytes();
        if !stderr.ends_with(b"\n") {
            stderr.push(b'\n');
        }
        CallResult { stderr, exit_code, ..Default::default() }
    }

    /// A usage error (exit 2).
    pub fn usage(message: String) -> Self {
        Self::error(exit::USAGE, message)
    }

    /// The command's result from the server's.
    pub fn from_tool(result: CallToolResult) -> Self {
        let mut text = String::new();
        let mut images = Vec::new();
        let mut notes = String::new();
        for content in result.content {
            match content {
                ContentBlock::Text(t) => push_line(&mut text, &t.text),
                ContentBlock::Image(image) => {
                    match base64::engine::general_purpose::STANDARD.decode(image.data.as_bytes()) {
                        Ok(data) => images.push(Image { mime: image.mime_type, data }),
                        Err(e) => push_line(&mut notes, &format!("an image the server sent is not base64: {e}")),
                    }
                }
                ContentBlock::Resource(resource) => match resource.resource {
                    ResourceContents::TextResourceContents { text: t, .. } => push_line(&mut text, &t),
                    ResourceContents::BlobResourceContents { uri, mime_type, .. } => push_line(
                        &mut notes,
                        &format!("a {} resource was left out: {uri}", mime_type.as_deref().unwrap_or("binary")),
                    ),
                    _ => push_line(&mut notes, "a kind of resource clix does not show was left out"),
                },
                ContentBlock::ResourceLink(link) => push_line(&mut text, &link.uri),
                ContentBlock::Audio(audio) => {
                    push_line(&mut notes, &format!("an {} clip was left out (no sound here)", audio.mime_type))
                }
                other => {
                    push_line(&mut notes, &format!("a kind of content clix does not show was left out: {other:?}"))
                }
            }
        }
        if result.is_error == Some(true) {
            let mut stderr = notes.into_bytes();
            stderr.extend(text.into_bytes());
            return CallResult { stdout: Vec::new(), stderr, exit_code: exit::FAILURE, images };
        }
        // The structured content is the result; its text is the same for
        // clients that cannot read it, so it is not printed twice.
        let stdout = match result.structured_content {
            Some(value) => {
                let mut json = serde_json::to_string_pretty(&value).unwrap_or_default();
                json.push('\n');
                json
            }
            None => text,
        };
        CallResult { stdout: stdout.into_bytes(), stderr: notes.into_bytes(), exit_code: exit::SUCCESS, images }
    }
}

fn push_line(out: &mut String, text: &str) {
    out.push_str(text);
    if !text.ends_with('\n') {
        out.push('\n');
    }
}
