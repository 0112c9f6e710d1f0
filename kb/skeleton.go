package kb

import (
	"fmt"
	"strings"
)

// skeleton is a new entry with every field to fill left empty, so that
// lint flags it until it is written. Fields that may be null are left out,
// and the Chinese text sits inline with each item.
const skeleton = `{
  "id": %[1]q,
  "title": "",
  "title_zh": "",
  "signature": "",
  "signature_zh": "",
  "regex": "",
  "aliases": [],
  "domain": %[2]q,
  "category": "",
  "root_cause": "",
  "root_cause_zh": "",
  "root_cause_type": "",
  "versions": [],
  "os_specific": {},
  "dead_ends": [
    {
      "action": "",
      "why_fails": "",
      "fail_rate": 0,
      "rate_basis": "estimate",
      "condition": "",
      "sources": [],
      "zh": ""
    }
  ],
  "workarounds": [
    {
      "action": "",
      "success_rate": 0,
      "rate_basis": "estimate",
      "how": "",
      "condition": "",
      "sources": [],
      "zh": ""
    },
    {
      "action": "",
      "kind": "check",
      "how": "",
      "condition": "",
      "sources": [],
      "zh": ""
    }
  ],
  "transition_graph": {
    "leads_to": [],
    "preceded_by": [],
    "frequently_confused_with": []
  },
  "official_doc_url": "",
  "verification_tier": "ai_generated",
  "confidence": 0,
  "fix_success_rate": 0,
  "fix_success_rate_basis": "estimate",
  "resolvable": "",
  "first_seen": "",
  "last_confirmed": %[3]q,
  "last_updated": %[3]q,
  "evidence_count": 0,
  "tags": [],
  "locale": "en",
  "examples": {
    "match": [],
    "no_match": [],
    "sources": []
  }
}
`

// Skeleton returns a new entry file for id ("domain/slug") dated date
// (YYYY-MM-DD): every field present, those to write left empty, so that
// Lint reports each until it is filled. The second workaround shows a
// check (a diagnostic step, no rate); delete what the entry does not need.
func Skeleton(id, date string) ([]byte, error) {
	if !idRE.MatchString(id) {
		return nil, fmt.Errorf("%q is not domain/slug in [a-z0-9.-]", id)
	}
	domain, _, _ := strings.Cut(id, "/")
	if !oneOf(domain, domains) {
		return nil, fmt.Errorf("domain %q is not one of %s", domain, strings.Join(domains, ", "))
	}
	return fmt.Appendf(nil, skeleton, id, domain, date), nil
}
