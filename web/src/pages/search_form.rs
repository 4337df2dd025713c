//! The jobs page's search form (`form[data-filters]`), folded inside
//! `details[data-filters-panel]` so that on a phone the jobs, not thirteen
//! fields, fill the first screen.
//!
//! The summary reads "Filters", then how many are set and which
//! (`[data-filters-set]` holds the number), so a folded form still says what
//! narrows the list. The server opens it only when it refused the search (the
//! fields are to be corrected); `assets/app.js` opens it on load when the
//! window is wider than a phone, where it fits beside the list. A search
//! stays folded on a phone: the answer is what was asked for, and the summary
//! says what it was.

use duraq_core::JobStatus;
use maud::{html, Markup};

use super::{Search, DEFAULT_LIMIT, MAX_LIMIT};
use crate::format::label;
use crate::html::link;
use crate::AppState;

/// The single-valued fields as the summary names them, in form order.
const CAPTIONS: [(&str, &str); 11] = [
    ("queue", "queue"),
    ("name", "name"),
    ("key", "schedule key"),
    ("sequence", "sequence"),
    ("fairness", "fairness key"),
    ("error", "error"),
    ("args", "args"),
    ("created_after", "created after"),
    ("created_before", "created before"),
    ("finished_after", "finished after"),
    ("finished_before", "finished before"),
];

/// The search form filled in with `search`, open when `open` (a refused
/// search) and otherwise folded until `app.js` opens it on a wide window.
pub(super) fn search_form(
    state: &AppState,
    search: &Search,
    limit: Option<&str>,
    open: bool,
) -> Markup {
    let checked: Vec<JobStatus> = search
        .statuses
        .iter()
        .filter_map(|s| s.parse().ok())
        .collect();
    let set = set_fields(search);
    let text = |name: &'static str, caption: &'static str, hint: &'static str| {
        html! { label { (caption) " " input name=(name) value=(search.field(name)) placeholder=(hint); } }
    };
    let when = |name: &'static str, caption: &'static str| {
        html! { label { (caption) " " input name=(name) type="datetime-local" step="1" value=(search.field(name)); } }
    };
    html! {
        details.filters data-filters-panel open[open] {
            summary {
                "Filters"
                @if !set.is_empty() {
                    " " span.muted data-filters-set=(set.len()) { "(" (set.len()) " set: " (set.join(", ")) ")" }
                }
            }
            form.filters data-filters method="get" action=(link(state, "/jobs")) {
                fieldset data-statuses {
                    legend { "Status" }
                    @for s in JobStatus::ALL {
                        label { input type="checkbox" name="status" value=(s.as_str()) checked[checked.contains(&s)]; " " (label(s)) }
                    }
                }
                (text("queue", "Queue", ""))
                (text("name", "Name", ""))
                (text("key", "Schedule key", ""))
                (text("sequence", "Sequence", ""))
                (text("fairness", "Fairness key", "tenant:42"))
                (text("error", "Error contains", "timeout"))
                (text("args", "Args contain (JSON)", "{\"user\":42}"))
                (when("created_after", "Created after (UTC)"))
                (when("created_before", "Created before (UTC)"))
                (when("finished_after", "Finished after (UTC)"))
                (when("finished_before", "Finished before (UTC)"))
                label { "Per page " input name="limit" type="number" min="1" max=(MAX_LIMIT)
                    value=(limit.map_or_else(|| DEFAULT_LIMIT.to_string(), str::to_owned)); }
                button type="submit" { "Search" }
                a href=(link(state, "/jobs")) { "Clear" }
            }
        }
    }
}

/// The fields that narrow the list, as the summary names them (the statuses
/// are one field, "status").
fn set_fields(search: &Search) -> Vec<&'static str> {
    let statuses = (!search.statuses.is_empty()).then_some("status");
    statuses
        .into_iter()
        .chain(
            CAPTIONS
                .iter()
                .filter(|(name, _)| !search.field(name).is_empty())
                .map(|(_, caption)| *caption),
        )
        .collect()
}
