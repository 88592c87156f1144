"""One router per resource: the site's pages, meetings, memory (evidence and recall) and
memory pages."""
