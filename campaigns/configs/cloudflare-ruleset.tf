# The same rule as cloudflare-ruleset.json, as Terraform's cloudflare_ruleset (provider v5).
resource "cloudflare_ruleset" "login" {
  zone_id = var.zone_id
  name    = "rate limit login"
  kind    = "zone"
  phase   = "http_ratelimit"
  rules = [{
    description = "login"
    expression  = "http.request.uri.path eq \"/login\""
    action      = "block"
    ratelimit = {
      characteristics     = ["cf.colo.id", "ip.src"]
      period              = 60
      requests_per_period = 100
      mitigation_timeout  = 600
    }
  }]
}
