//! Which of the two views a page, a query or an action is about: a leaf that
//! the view's page, query, scan, table and bulk modules all name, so none of
//! them needs the page module (`pages::views`) for it.

use crate::html::link;
use crate::AppState;

/// Which view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// Queued jobs that failed at least once.
    Retries,
    /// Queued jobs due later that never ran.
    Scheduled,
}

impl View {
    /// The page name (`main[data-page]`, the nav key and the path).
    pub fn name(self) -> &'static str {
        match self {
            Self::Retries => "retries",
            Self::Scheduled => "scheduled",
        }
    }

    /// The view `name` names, if any.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Retries, Self::Scheduled]
            .into_iter()
            .find(|v| v.name() == name)
    }

    /// The heading.
    pub fn title(self) -> &'static str {
        match self {
            Self::Retries => "Retries",
            Self::Scheduled => "Scheduled",
        }
    }

    /// The view at `query` (no `?` when empty), inside the dashboard.
    pub fn link(self, state: &AppState, query: &str) -> String {
        match query {
            "" => link(state, &format!("/{}", self.name())),
            q => link(state, &format!("/{}?{q}", self.name())),
        }
    }
}
