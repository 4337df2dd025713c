//! The query string of the retries and scheduled views, read strictly.
//!
//! A view is a link: its narrowing (`queue`, `name`, and on the retries view
//! `error`, the text the last error contains), where its bounded read of
//! queued rows starts (`older=<id>`, see `pages::view_scan`) and where its
//! page starts in due order (`after=<due ms>:<id>`) all live in the query.
//! Why strict: a misspelt key (`erorr=timeout`) read as "no narrowing" would
//! show, and let an operator run or cancel, every job of the view while the
//! address bar says otherwise. So a key the view does not know, or one given
//! twice, is refused with a 400 naming its code (`unknown-query-key`,
//! `repeated-query-key`), as is a cursor that is no cursor (`invalid-cursor`).
//! `token` is left to the guard (`security.rs`), which reads it first.
//!
//! [`filters`] is the form that writes the narrowing keys: a search is a link.

use maud::{html, Markup};

use super::view_kind::View;
use crate::AppState;

/// A refused query: a stable code for `data-error`, and a sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// `unknown-query-key`, `repeated-query-key` or `invalid-cursor`.
    pub code: &'static str,
    /// For people.
    pub text: String,
}

/// A place in a view's due order: strictly after the job `id` due at `due_ms`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    /// The job's due time (ms since the epoch).
    pub due_ms: i64,
    /// The job's id (ties on the due time are ordered by id).
    pub id: String,
}

impl Cursor {
    /// `<due ms>:<id>`.
    pub fn text(&self) -> String {
        format!("{}:{}", self.due_ms, self.id)
    }

    fn parse(text: &str) -> Option<Self> {
        let (ms, id) = text.split_once(':')?;
        let due_ms = ms.parse::<i64>().ok()?;
        (!id.is_empty()).then(|| Self {
            due_ms,
            id: id.to_owned(),
        })
    }
}

/// What a view's query asks for (empty text: not narrowed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ViewQuery {
    /// Only jobs of this queue.
    pub queue: String,
    /// Only jobs of this name.
    pub name: String,
    /// Only jobs whose last error contains this text (retries only).
    pub error: String,
    /// Read queued rows strictly older than this job (the next window).
    pub older: String,
    /// Show jobs strictly after this place in due order.
    pub after: Option<Cursor>,
}

/// The keys every view reads beside its narrowing ones.
const PLACE_KEYS: [&str; 2] = ["older", "after"];

impl ViewQuery {
    /// The narrowing keys of `view`, in form order.
    pub fn narrowing(view: View) -> &'static [&'static str] {
        match view {
            View::Retries => &["queue", "name", "error"],
            View::Scheduled => &["queue", "name"],
        }
    }

    /// Reads `pairs` for `view`; `extra` keys (a bulk form's `action`,
    /// `csrf`, `expected`) are the caller's and skipped here.
    pub fn parse(view: View, pairs: &[(String, String)], extra: &[&str]) -> Result<Self, Refusal> {
        let mut q = Self::default();
        let mut seen: Vec<&str> = Vec::new();
        for (key, value) in pairs {
            let key = key.as_str();
            if key == "token" || extra.contains(&key) {
                continue;
            }
            let known = Self::narrowing(view).contains(&key) || PLACE_KEYS.contains(&key);
            if !known {
                return Err(Refusal {
                    code: "unknown-query-key",
                    text: format!("this view takes no `{key}`"),
                });
            }
            if seen.contains(&key) {
                return Err(Refusal {
                    code: "repeated-query-key",
                    text: format!("`{key}` is given more than once"),
                });
            }
            seen.push(key);
            let value = value.trim().to_owned();
            match key {
                "queue" => q.queue = value,
                "name" => q.name = value,
                "error" => q.error = value,
                "older" => q.older = value,
                _ if value.is_empty() => {}
                _ => {
                    q.after = Some(Cursor::parse(&value).ok_or_else(|| Refusal {
                        code: "invalid-cursor",
                        text: "after must be `<due ms>:<job id>`".to_owned(),
                    })?);
                }
            }
        }
        Ok(q)
    }

    /// The pairs that choose the view's jobs (narrowing and window, no
    /// `after`): what a link to another page of it, and a bulk form, carry.
    pub fn selection(&self) -> Vec<(&'static str, String)> {
        [
            ("queue", &self.queue),
            ("name", &self.name),
            ("error", &self.error),
            ("older", &self.older),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k, v.clone()))
        .collect()
    }

    /// Whether any narrowing is set.
    pub fn narrowed(&self) -> bool {
        !(self.queue.is_empty() && self.name.is_empty() && self.error.is_empty())
    }

    /// The query string of [`ViewQuery::selection`] plus `after` (no `?`).
    pub fn query(&self, after: Option<&Cursor>) -> String {
        let mut pairs = self.selection();
        if let Some(c) = after {
            pairs.push(("after", c.text()));
        }
        serde_urlencoded::to_string(pairs).unwrap_or_default()
    }
}

/// The view's search form (`form[data-view-filters]`), filled in with `q`.
/// A new search starts at the newest queued jobs and the soonest due.
pub fn filters(state: &AppState, view: View, q: &ViewQuery) -> Markup {
    let field = |key: &str| match key {
        "queue" => (&q.queue, "Queue", ""),
        "name" => (&q.name, "Name", ""),
        _ => (&q.error, "Last error contains", "timeout"),
    };
    html! {
        form.filters data-view-filters method="get" action=(view.link(state, "")) {
            @for key in ViewQuery::narrowing(view) {
                @let (value, caption, hint) = field(key);
                label { (caption) " " input name=(key) value=(value) placeholder=(hint); }
            }
            button type="submit" { "Search" }
            @if q.narrowed() { a href=(view.link(state, "")) { "Clear" } }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(view: View, q: &str) -> Result<ViewQuery, &'static str> {
        let pairs: Vec<(String, String)> = serde_urlencoded::from_str(q).unwrap();
        ViewQuery::parse(view, &pairs, &["action"]).map_err(|r| r.code)
    }

    #[test]
    fn a_query_round_trips_and_strays_are_refused() {
        let q = parse(View::Retries, "error=time%20out&queue=mail&after=5:ab-1").unwrap();
        assert_eq!((q.error.as_str(), q.queue.as_str()), ("time out", "mail"));
        let after = q.after.clone().unwrap();
        assert_eq!((after.due_ms, after.id.as_str()), (5, "ab-1"));
        assert_eq!(parse(View::Retries, &q.query(Some(&after))), Ok(q));
        assert_eq!(
            parse(View::Scheduled, "action=x&token=y&name="),
            Ok(ViewQuery::default())
        );

        assert_eq!(parse(View::Scheduled, "error=x"), Err("unknown-query-key"));
        assert_eq!(parse(View::Retries, "erorr=x"), Err("unknown-query-key"));
        assert_eq!(
            parse(View::Retries, "queue=a&queue=b"),
            Err("repeated-query-key")
        );
        for bad in ["after=5", "after=x:1", "after=5:"] {
            assert_eq!(parse(View::Retries, bad), Err("invalid-cursor"), "{bad}");
        }
    }
}
