//! FTS5's own tokenizer (`porter unicode61`, the one `memories_fts` is
//! declared with), called from Rust through FTS5's C API, so that clix's
//! postings (`postings.rs`) hold exactly the terms FTS5 indexes and count
//! tokens exactly as FTS5 counts them: their BM25 is then FTS5's `bm25()`
//! to the last bit, and FTS5 itself is the oracle of their tests.
//!
//! The API is reached the documented way: `SELECT fts5(?1)` with a
//! pointer bound under the type `fts5_api_ptr` (SQLite's "Extending FTS5",
//! section 7.1); the tokenizer is found by name and created with the
//! arguments of the `tokenize =` option.

use std::ffi::{c_char, c_int, c_void};
use std::ops::Range;
use std::ptr;

use rusqlite::Connection;
use rusqlite::ffi;

/// FTS5's flags: tokenizing a document to index, and a token at the same
/// position as the one before (a synonym; FTS5 does not count it).
const TOKENIZE_DOCUMENT: c_int = 0x0004;
const TOKEN_COLOCATED: c_int = 0x0001;

/// What a token is handed to: its bytes, and where it is in the text.
type Sink<'a> = &'a mut dyn FnMut(&[u8], Range<usize>);

/// FTS5 cuts a longer token to this many bytes (`FTS5_MAX_TOKEN_SIZE`).
const MAX_TOKEN_SIZE: usize = 32768;

/// One `porter unicode61` tokenizer of a connection, deleted on drop (the
/// connection outlives it: it borrows it).
pub(super) struct Tokenizer<'db> {
    methods: ffi::fts5_tokenizer,
    instance: *mut ffi::Fts5Tokenizer,
    _db: &'db Connection,
}

/// An error of the API, as rusqlite reports SQLite's.
fn api_error(what: &str, code: c_int) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(ffi::Error::new(code), Some(format!("FTS5's tokenizer API: {what}")))
}

impl<'db> Tokenizer<'db> {
    /// The tokenizer `memories_fts` uses, on `db`.
    pub(super) fn new(db: &'db Connection) -> rusqlite::Result<Self> {
        let api = fts5_api(db)?;
        // SAFETY: `api` is the connection's live fts5_api (FTS5 is compiled
        // into the bundled SQLite); the names are NUL-terminated and the
        // out-pointers are valid for writes. The methods FTS5 fills in are
        // those of its built-in porter tokenizer, called with the user data
        // it gave.
        unsafe {
            let find = (*api).xFindTokenizer.ok_or_else(|| api_error("no xFindTokenizer", ffi::SQLITE_ERROR))?;
            let mut user: *mut c_void = ptr::null_mut();
            let mut methods: ffi::fts5_tokenizer = std::mem::zeroed();
            let rc = find(api, c"porter".as_ptr(), &mut user, &mut methods);
            if rc != ffi::SQLITE_OK {
                return Err(api_error("no porter tokenizer", rc));
            }
            let create = methods.xCreate.ok_or_else(|| api_error("no xCreate", ffi::SQLITE_ERROR))?;
            let mut args = [c"unicode61".as_ptr()];
            let mut instance: *mut ffi::Fts5Tokenizer = ptr::null_mut();
            let rc = create(user, args.as_mut_ptr(), 1, &mut instance);
            if rc != ffi::SQLITE_OK || instance.is_null() {
                return Err(api_error("porter unicode61 could not be created", rc));
            }
            Ok(Tokenizer { methods, instance, _db: db })
        }
    }

    /// Calls `each` with every token of `text` FTS5 would index and count,
    /// in order (each already folded and stemmed).
    pub(super) fn tokens(&self, text: &str, mut each: impl FnMut(&[u8])) -> rusqlite::Result<()> {
        self.spans(text, |token, _| each(token))
    }

    /// As [`Tokenizer::tokens`], with where each token is in `text` (a byte range).
    pub(super) fn spans(&self, text: &str, mut each: impl FnMut(&[u8], Range<usize>)) -> rusqlite::Result<()> {
        let Ok(len) = c_int::try_from(text.len()) else {
            return Err(api_error("a text over 2 GB", ffi::SQLITE_TOOBIG));
        };
        let mut sink: Sink<'_> = &mut each;
        let tokenize = self.methods.xTokenize.ok_or_else(|| api_error("no xTokenize", ffi::SQLITE_ERROR))?;
        // SAFETY: `instance` was created by these methods and is not yet
        // deleted; `text` outlives the call; the context is a pointer to
        // `sink`, which `on_token` reads back as the same type during the call.
        let rc = unsafe {
            tokenize(
                self.instance,
                (&mut sink as *mut Sink<'_>).cast(),
                TOKENIZE_DOCUMENT,
                text.as_ptr().cast::<c_char>(),
                len,
                Some(on_token),
            )
        };
        if rc == ffi::SQLITE_OK { Ok(()) } else { Err(api_error("tokenizing failed", rc)) }
    }
}

impl Drop for Tokenizer<'_> {
    fn drop(&mut self) {
        if let Some(delete) = self.methods.xDelete {
            // SAFETY: created by these methods, deleted once.
            unsafe { delete(self.instance) };
        }
    }
}

/// The callback FTS5 calls per token: hands it to the sink, as FTS5's own
/// insert callback would count it (colocated tokens are not).
unsafe extern "C" fn on_token(
    context: *mut c_void,
    flags: c_int,
    token: *const c_char,
    len: c_int,
    start: c_int,
    end: c_int,
) -> c_int {
    if flags & TOKEN_COLOCATED != 0 {
        return ffi::SQLITE_OK;
    }
    // SAFETY: `context` is the `&mut Sink` that `spans` passed,
    // alive for the whole xTokenize call; FTS5 gives `len` readable bytes.
    unsafe {
        let sink = &mut *context.cast::<Sink<'_>>();
        let len = usize::try_from(len).unwrap_or(0).min(MAX_TOKEN_SIZE);
        let bytes = if len == 0 { &[][..] } else { std::slice::from_raw_parts(token.cast::<u8>(), len) };
        let span = usize::try_from(start).unwrap_or(0)..usize::try_from(end).unwrap_or(0);
        sink(bytes, span);
    }
    ffi::SQLITE_OK
}

/// The connection's `fts5_api`, from `SELECT fts5(?1)`.
fn fts5_api(db: &Connection) -> rusqlite::Result<*mut ffi::fts5_api> {
    let mut api: *mut ffi::fts5_api = ptr::null_mut();
    // SAFETY: the statement is prepared on this open connection, stepped
    // once and finalized; the bound pointer is to `api`, which FTS5 writes
    // during the step, while it is alive.
    unsafe {
        let handle = db.handle();
        let mut stmt: *mut ffi::sqlite3_stmt = ptr::null_mut();
        let rc = ffi::sqlite3_prepare_v2(handle, c"SELECT fts5(?1)".as_ptr(), -1, &mut stmt, ptr::null_mut());
        if rc != ffi::SQLITE_OK {
            return Err(api_error("SELECT fts5(?1) did not prepare", rc));
        }
        let slot: *mut *mut ffi::fts5_api = &mut api;
        ffi::sqlite3_bind_pointer(stmt, 1, slot.cast(), c"fts5_api_ptr".as_ptr(), None);
        ffi::sqlite3_step(stmt);
        ffi::sqlite3_finalize(stmt);
    }
    if api.is_null() { Err(api_error("FTS5 gave no API", ffi::SQLITE_ERROR)) } else { Ok(api) }
}
