//! Images a line shows the model (`see`, a browser screenshot, an MCP
//! tool's image): checked, scaled down, and held for the model's next turn
//! within one budget per line, whichever command attaches them.

use std::io::Cursor;
use std::sync::{Arc, Mutex};

/// Longest side sent to a model; larger images are scaled down (the size
/// vision models work at, and what keeps a request small).
pub const MAX_IMAGE_SIDE: u32 = 1568;

/// The most pixels `see` decodes (50 megapixels, ~200 MB as RGBA): a small
/// file can declare a huge image (a 470 KB PNG of 22000x22000 took clix to
/// 1 GB), so the header's size is checked before anything is decoded.
pub const MAX_IMAGE_PIXELS: u64 = 50_000_000;

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
pub type SeenImages = Arc<Mutex<Vec<SeenImage>>>;

/// The most image bytes one line attaches (see, MCP results, browser
/// screenshots together): held until the model's next turn, so counted
/// like any data the line holds.
pub const MAX_LINE_IMAGE_BYTES: usize = 64 << 20;

/// Why an image is not shown to the model; each displays as the stderr
/// line the command writes (`[error] …`, with what to do).
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The bytes are no image.
    #[error("[error] not an image file: {0} (use cat to read text files)\n")]
    NotImage(String),
    /// An image of a kind the decoder does not read.
    #[error("[error] see: {path}: {kind} images are not supported; convert it to PNG\n")]
    Unsupported {
        /// The image.
        path: String,
        /// Its kind (`heic`).
        kind: String,
    },
    /// The decoder failed on it.
    #[error("[error] see: {path}: cannot decode the image: {reason}\n")]
    Undecodable {
        /// The image.
        path: String,
        /// The decoder's words.
        reason: String,
    },
    /// More pixels than are decoded.
    #[error(
        "[error] see: {path}: {width}x{height} is {} megapixels, more than the {} see decodes; make a smaller copy \
         first (e.g. python3 with Pillow: Image.open(p).reduce(8).save('small.png'))\n",
        u64::from(*width) * u64::from(*height) / 1_000_000,
        MAX_IMAGE_PIXELS / 1_000_000
    )]
    TooManyPixels {
        /// The image.
        path: String,
        /// Its width.
        width: u32,
        /// Its height.
        height: u32,
    },
    /// Scaling it down failed.
    #[error("[error] see: {path}: cannot scale the image down: {reason}\n")]
    CannotScale {
        /// The image.
        path: String,
        /// The encoder's words.
        reason: String,
    },
    /// The line's images already hold the most one line attaches.
    #[error(
        "[error] {who}: {path}: the images attached in this line already hold {} MiB, and one line attaches at most \
         {} MiB; look at the rest in another line\n",
        held >> 20,
        MAX_LINE_IMAGE_BYTES >> 20
    )]
    LineFull {
        /// The command attaching it.
        who: String,
        /// The image.
        path: String,
        /// Bytes the line's images hold.
        held: usize,
    },
}

/// Attaches `image` to the line's images, unless they would pass
/// [`MAX_LINE_IMAGE_BYTES`]: then the error that says so, for `who`.
pub fn attach(seen: &SeenImages, image: SeenImage, who: &str) -> Result<(), ImageError> {
    let mut images = seen.lock().unwrap_or_else(|p| p.into_inner());
    let held: usize = images.iter().map(|i| i.data.len()).sum();
    if held + image.data.len() > MAX_LINE_IMAGE_BYTES {
        return Err(ImageError::LineFull { who: who.into(), path: image.path, held });
    }
    images.push(image);
    Ok(())
}

/// [`decode`] on a blocking thread: decoding is CPU-bound work of up to
/// seconds, so other sessions' lines go on meanwhile. `label` names the
/// image in errors, as `decode`'s `path` does (`a.png`, `fx image 1`).
pub async fn decode_off_thread(label: &str, bytes: Vec<u8>) -> Result<SeenImage, ImageError> {
    let owned = label.to_string();
    tokio::task::spawn_blocking(move || decode(&owned, &bytes))
        .await
        .unwrap_or_else(|e| Err(ImageError::Undecodable { path: label.into(), reason: e.to_string() }))
}

/// Checks that `bytes` are an image we can show, and scales it down if needed.
pub fn decode(path: &str, bytes: &[u8]) -> Result<SeenImage, ImageError> {
    let not_image = || ImageError::NotImage(path.into());
    let kind = infer::get(bytes).filter(|k| k.matcher_type() == infer::MatcherType::Image).ok_or_else(not_image)?;
    let format = image::ImageFormat::from_mime_type(kind.mime_type())
        .ok_or_else(|| ImageError::Unsupported { path: path.into(), kind: kind.extension().into() })?;
    let cannot = |e: image::ImageError| ImageError::Undecodable { path: path.into(), reason: e.to_string() };
    let reader = || image::ImageReader::with_format(Cursor::new(bytes), format);
    let (width, height) = reader().into_dimensions().map_err(cannot)?;
    let pixels = u64::from(width) * u64::from(height);
    if pixels > MAX_IMAGE_PIXELS {
        return Err(ImageError::TooManyPixels { path: path.into(), width, height });
    }
    let decoded = reader().decode().map_err(cannot)?;
    let (width, height) = (decoded.width(), decoded.height());
    // A file bigger than its pixels (a PNG of 8x8 carrying 30 MB in a text
    // chunk) is sent as its pixels alone, encoded again.
    let lean = bytes.len() as u64 <= u64::from(width) * u64::from(height) * 4 + (64 << 10);
    if width.max(height) <= MAX_IMAGE_SIDE && lean {
        return Ok(SeenImage { path: path.into(), mime: kind.mime_type().into(), data: bytes.to_vec(), width, height });
    }
    let scaled = if width.max(height) <= MAX_IMAGE_SIDE {
        decoded
    } else {
        decoded.resize(MAX_IMAGE_SIDE, MAX_IMAGE_SIDE, image::imageops::FilterType::Triangle)
    };
    let mut data = Vec::new();
    scaled
        .write_to(&mut Cursor::new(&mut data), image::ImageFormat::Png)
        .map_err(|e| ImageError::CannotScale { path: path.into(), reason: e.to_string() })?;
    Ok(SeenImage { path: path.into(), mime: "image/png".into(), data, width: scaled.width(), height: scaled.height() })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk of a PNG file: length, type, data, CRC-32 of type and data.
    fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
        let mut crc = 0xffff_ffffu32;
        for &byte in kind.iter().chain(data) {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = if crc & 1 == 1 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
            }
        }
        let mut out = (data.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        out.extend_from_slice(&(!crc).to_be_bytes());
        out
    }

    /// Security round 4, finding 8: a PNG of 8x8 pixels carrying 30 MB in a
    /// text chunk is held as its pixels, not its file.
    #[test]
    fn an_image_is_held_as_its_pixels_not_its_padding() {
        let mut pixels = Vec::new();
        image::RgbaImage::from_pixel(8, 8, image::Rgba([200, 10, 10, 255]))
            .write_to(&mut std::io::Cursor::new(&mut pixels), image::ImageFormat::Png)
            .unwrap();
        let end = pixels.len() - 12; // before IEND
        let mut fat = pixels[..end].to_vec();
        let mut text = b"Comment\0".to_vec();
        text.resize(30 << 20, b'x');
        fat.extend(chunk(b"tEXt", &text));
        fat.extend_from_slice(&pixels[end..]);
        let seen = decode("fat.png", &fat).unwrap();
        assert_eq!((seen.width, seen.height, seen.mime.as_str()), (8, 8, "image/png"));
        assert!(seen.data.len() < 4096, "{} bytes held", seen.data.len());
        let lean = decode("lean.png", &pixels).unwrap();
        assert_eq!(lean.data, pixels, "a lean file is sent as it is");
    }

    /// What one line attaches is bounded, whoever attaches it.
    #[test]
    fn a_line_attaches_at_most_its_image_budget() {
        let seen: SeenImages = Arc::default();
        let image = |n: usize| SeenImage {
            path: format!("i{n}.png"),
            mime: "image/png".into(),
            data: vec![0; 20 << 20],
            width: 1,
            height: 1,
        };
        for n in 0..3 {
            attach(&seen, image(n), "see").unwrap();
        }
        let refused = attach(&seen, image(3), "see").unwrap_err();
        assert!(matches!(&refused, ImageError::LineFull { held, .. } if *held == 60 << 20), "{refused}");
        let refused = refused.to_string();
        assert!(refused.contains("i3.png") && refused.contains("already hold 60 MiB"), "{refused}");
        assert_eq!(seen.lock().unwrap().len(), 3);
    }
}
