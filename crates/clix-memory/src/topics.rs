//! Topics a person moves: before topics were keyed by the workspace's
//! path, a folder's memories were under its name. They stay there, where
//! no session reads them, until the person says they are this folder's
//! (`clix memory adopt OLD`). Only a person can: a session never claims
//! another topic's memories, or a cloned folder of the same name would.

use crate::{GLOBAL_TOPIC, Location, MemoryError, Store, topic_name};

/// Why `memory adopt` moved nothing.
#[derive(Debug, thiserror::Error)]
pub enum AdoptError {
    /// Not one old topic named.
    #[error("usage: clix memory adopt OLD_TOPIC  (moves OLD_TOPIC's memories into this folder's topic)")]
    Usage,
    /// This folder's own topic, or the global one.
    #[error("memory adopt: {0:?} cannot be adopted (it is this folder's topic, or the global one)")]
    NotAnother(String),
    /// A topic with no memories.
    #[error("memory adopt: the topic {0:?} holds no memories; see clix memory recent for the topics there are")]
    Empty(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] MemoryError),
}

/// Moves the memories of the one old topic in `args` into `topic`; what
/// was done, as a line for the person.
pub fn adopt(location: &Location, topic: &str, args: &[String]) -> Result<String, AdoptError> {
    let [old] = args else { return Err(AdoptError::Usage) };
    if old == topic || old == GLOBAL_TOPIC {
        return Err(AdoptError::NotAnother(old.clone()));
    }
    match Store::at(location)?.retopic(old, topic)? {
        0 => Err(AdoptError::Empty(old.clone())),
        moved => Ok(format!("moved {moved} memories of topic {old:?} to this folder's topic ({topic})")),
    }
}

/// A note for the person when memories sit under this folder's name, the
/// topic every folder of that name shared before topics were keyed by path.
pub fn old_topic_note(location: &Location, topic: &str) -> Option<String> {
    let name = topic_name(topic);
    let count = Store::at(location).and_then(|s| s.count(name)).ok()?;
    (count > 0 && name != topic).then(|| {
        format!(
            "[note] memory: {count} memories are under the topic {name:?}, a folder's name, which every folder called \
             {name} shared before topics were keyed by path ({topic}); sessions here no longer read them. If they are \
             this project's: clix memory adopt {name}"
        )
    })
}
