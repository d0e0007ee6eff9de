#!/usr/bin/env python3
"""The console in a real browser: Debian's headless Chromium driven by Selenium (chromedriver), against
a real attestd (the binaries of $ATTESTD_BIN) on loopback, with synthetic devices from `attestctl
simulate`. Run by scripts/check console, which makes the virtualenv; prints PASS/FAIL lines and
"N passed, N failed".

As a workspace owner (its key from attestctl): sign in, create an integration (first with a bad Team ID:
the message shows), copy its client ID, run devices against it, see them in Devices, suspend and resume
it, block one device (focus back on its row, now offering Unblock), revoke the integration with the confirmation (the typed name), see it revoked and
its devices' tokens refused by /v1/authorize, read the audit log, create a developer key in Admin keys,
sign out. As that developer: no create, revoke, block or key control. Then a creation with the
keyboard only. No page may log an error (a CSP violation included). Screenshots go to --artifacts.
"""

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # scripts/lib/
from attestd_testlib import HOST, Attestd, Tally  # noqa: E402

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, TimeoutException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

TEAM = "ABCDE12345"
BUNDLE = "com.example.console"


def run(command, **kwargs):
    return subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120, **kwargs)


def authorize(port, token):
    request = urllib.request.Request("http://%s:%d/v1/authorize" % (HOST, port), headers={"Authorization": "Bearer " + token})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


class Console:
    """The browser on the console, with waits bounded in time."""

    def __init__(self, base, profile, artifacts):
        options = webdriver.ChromeOptions()
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,860",
                     "--user-data-dir=" + profile, "--no-first-run", "--disable-extensions", "--lang=en-US"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
        self.base = base
        self.artifacts = artifacts
        self.errors = []
        # Lets the page write and read the clipboard (the copy button) without a prompt.
        self.driver.execute_cdp_cmd("Browser.grantPermissions", {
            "origin": base, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})

    def wait(self, condition, seconds=10):
        # A screen replaces its content as it loads: an element found a moment ago may be gone.
        return WebDriverWait(self.driver, seconds, poll_frequency=0.05,
                             ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(lambda d: condition(d))

    def find(self, css):
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def present(self, css):
        return len(self.driver.find_elements(By.CSS_SELECTOR, css)) > 0

    def heading(self):
        return self.wait(lambda d: d.find_element(By.CSS_SELECTOR, "main h1")).text

    def wait_heading(self, text):
        return self.wait(lambda d: any(h.text == text for h in d.find_elements(By.CSS_SELECTOR, "main h1")))

    def text(self, css):
        return self.find(css).text

    def shot(self, name):
        path = os.path.join(self.artifacts, name)
        self.driver.save_screenshot(path)
        return path

    def collect_log(self):
        for entry in self.driver.get_log("browser"):
            if entry.get("level") == "SEVERE":
                self.errors.append(entry.get("message", ""))

    def sign_in(self, key):
        self.driver.get(self.base + "/console/")
        field = self.wait(lambda d: d.find_element(By.ID, "admin-key"))
        field.send_keys(key)
        self.find("#sign-in").click()
        self.wait_heading("App integrations")

    def sign_out(self):
        self.find("#sign-out").click()
        self.wait(lambda d: d.find_elements(By.ID, "admin-key"))

    def quit(self):
        self.driver.quit()


def owner_flow(t, browser, args, attestd, work):
    """An owner signs in, creates an integration, watches its devices, suspends, blocks and revokes,
    reads the audit log and makes a developer's key (args.developer_key); the client ID."""
    client_id = create_integration_in_console(t, browser, args)
    tokens = simulated_devices(t, args, attestd, work, client_id)
    verifications_chart(t, browser, attestd, client_id)
    suspend_and_block(t, browser, attestd, tokens)
    revoke_in_console(t, browser, attestd, tokens)
    audit_and_keys(t, browser, args)
    return client_id


def create_integration_in_console(t, browser, args):
    """Sign-in, the create form (a bad Team ID first), the Overview and its copy button: the client ID."""
    browser.sign_in(args.owner_key)
    t.pass_("an owner signs in with an admin key and lands on App integrations")
    browser.find("#create-integration").click()
    browser.wait_heading("Create app integration")
    browser.find("#name").send_keys("Messages")
    browser.find("#team_id").send_keys("abcde12345")
    browser.find("#bundle_ids").send_keys(BUNDLE)
    browser.find("#create-submit").click()
    message = browser.wait(lambda d: d.find_element(By.ID, "team_id-error").text)
    t.check("10 upper-case letters and digits" in message and browser.find("#team_id").get_attribute("aria-invalid") == "true",
            "a bad Team ID shows its message beside the field", message)
    browser.shot("create-bad-team-id.png")
    team = browser.find("#team_id")
    team.clear()
    team.send_keys(TEAM)
    browser.find("#create-submit").click()
    client_id = browser.wait(lambda d: d.find_element(By.ID, "client-id").get_attribute("value"))
    t.check(client_id.startswith("clid_") and len(client_id) == 37, "the integration is created and its Overview shows the client ID",
            client_id)
    browser.find("#copy-client-id").click()
    browser.wait(lambda d: "copied" in d.find_element(By.ID, "toast").text)
    copied = browser.driver.execute_async_script(
        "const done = arguments[0]; navigator.clipboard.readText().then(done, (e) => done('error: ' + e));")
    t.check(copied == client_id, "the copy button puts the client ID on the clipboard", copied)
    browser.shot("overview.png")
    return client_id


def simulated_devices(t, args, attestd, work, client_id):
    """Three simulated devices attested and refreshed against the new integration: their tokens."""
    tokens_file = os.path.join(work, "tokens.txt")
    sim = run([os.path.join(args.bin, "attestctl"), "simulate", "--url", "http://%s:%d" % (HOST, attestd.port), "--client-id", client_id,
               "--team-id", TEAM, "--bundle-id", BUNDLE, "--devices", "3", "--refreshes", "1", "--state", args.state,
               "--tokens-file", tokens_file])
    tokens = open(tokens_file).read().split() if os.path.exists(tokens_file) else []
    t.check(sim.returncode == 0 and len(tokens) == 3, "attestctl simulate runs 3 devices against the new integration",
            sim.stdout[-400:] + sim.stderr[-400:])
    t.check(all(authorize(attestd.port, token) == 200 for token in tokens), "their tokens pass /v1/authorize")
    return tokens


def suspend_and_block(t, browser, attestd, tokens):
    """Devices lists them; Suspend and Resume; Block one device."""
    browser.driver.find_element(By.LINK_TEXT, "Devices").click()
    rows = browser.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "tbody tr[data-key-id]"))
    t.check(len(rows) == 3 and all("active" in row.text.lower() for row in rows), "Devices lists the 3 devices, active, with their live tokens",
            "%d rows" % len(rows))
    browser.shot("devices.png")

    browser.driver.find_element(By.LINK_TEXT, "Overview").click()
    edit_policy(t, browser)
    browser.wait(lambda d: d.find_element(By.ID, "suspend")).click()
    said = browser.wait(lambda d: d.find_element(By.ID, "confirm") if d.find_element(By.ID, "confirm").is_displayed() else None).text
    t.check("refused at once" in said and "Resume" in said, "Suspend asks first and says what it does to live apps", said)
    browser.find("#confirm-ok").click()
    browser.wait(lambda d: d.find_element(By.CSS_SELECTOR, ".heading .badge").text.lower() == "suspended")
    stopped = browser.wait(lambda d: d.find_element(By.ID, "stopped-by")).text
    t.check("Olivia (owner)" in stopped, "the Overview says who suspended it and when", stopped)
    suspended = [authorize(attestd.port, token) for token in tokens]
    browser.wait(lambda d: d.find_element(By.ID, "resume")).click()
    browser.wait(lambda d: d.find_element(By.CSS_SELECTOR, ".heading .badge").text.lower() == "active")
    resumed = [authorize(attestd.port, token) for token in tokens]
    t.check(suspended == [401] * 3 and resumed == [200] * 3, "Suspend refuses the devices' tokens and Resume lets them through again",
            "suspended %s, resumed %s" % (suspended, resumed))
    browser.driver.find_element(By.LINK_TEXT, "Devices").click()
    rows = browser.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "tbody tr[data-key-id]"))
    rows[0].find_element(By.TAG_NAME, "button").click()
    browser.wait(lambda d: d.find_element(By.ID, "confirm").is_displayed())
    browser.find("#confirm-ok").click()
    browser.wait(lambda d: "blocked" in d.find_elements(By.CSS_SELECTOR, "tbody tr[data-key-id]")[0].text.lower())
    t.check(sum(authorize(attestd.port, token) == 200 for token in tokens) == 2, "Block blocks the device: its token is refused at once")
    focused = browser.driver.execute_script(
        "const a = document.activeElement; return [a.closest('tr') && a.closest('tr').dataset.keyId, a.textContent];")
    blocked_key = browser.find("tbody tr[data-key-id]").get_attribute("data-key-id")
    browser.shot("devices-blocked.png")
    t.check(focused == [blocked_key, "Unblock"], "after the block, focus is back on the device's row, on its Unblock button "
            "(attestd runs with --device-unblock on)", "%s" % focused)
    find_device(t, browser, rows_key(browser)[0])
    revoke_one_token(t, browser, attestd, tokens)


def revoke_one_token(t, browser, attestd, tokens):
    """A device's row lists its live token; Revoke (confirmed) refuses that one token at once."""
    before = [authorize(attestd.port, token) for token in tokens]
    row = browser.find("tbody tr[data-key-id]")
    row.find_element(By.XPATH, ".//button[text()='Tokens']").click()
    items = browser.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "tr.tokens-row li[data-token]"))
    listed = len(items)
    width = browser.driver.execute_script("return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    t.check(width[0] <= width[1], "at 1280 pixels, Devices with a row's tokens open does not scroll sideways", "%s" % width)
    # The newest first: the token the device holds now (the tokens file keeps each device's last).
    items[0].find_element(By.TAG_NAME, "button").click()
    browser.wait(lambda d: d.find_element(By.ID, "confirm").is_displayed())
    browser.find("#confirm-ok").click()
    browser.wait(lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.tokens-row li[data-token]")) == listed - 1)
    after = [authorize(attestd.port, token) for token in tokens]
    t.check(before.count(200) == 2 and after.count(200) == 1,
            "a device's newest token is revoked from its row: that one token is refused at once, the other device's passes",
            "before %s, after %s" % (before, after))


def edit_policy(t, browser):
    """The policy form refuses an out-of-range limit in place, then saves a valid one."""
    field = browser.wait(lambda d: d.find_element(By.ID, "policy-tokens"))
    field.clear()
    field.send_keys("0")
    browser.find("#policy-save").click()
    error = browser.wait(lambda d: d.find_element(By.ID, "policy-tokens-error").text)
    t.check("1 to 1000" in error, "the policy form refuses a live-token limit of 0 in place", error)
    field = browser.find("#policy-tokens")
    field.clear()
    field.send_keys("5")
    browser.find("#policy-save").click()
    browser.wait(lambda d: "Live tokens per device\n5" in d.find_element(By.CSS_SELECTOR, "main dl").text)
    t.check(True, "the policy form saves a live-token limit of 5, shown in the details")


def session_failures(t, browser, args):
    """A session that ended mid-action, and another key signed in in a second tab: told, never silent."""
    driver = browser.driver
    driver.find_element(By.LINK_TEXT, "Audit log").click()
    browser.wait_heading("Audit log")
    browser.collect_log()
    driver.delete_cookie("attestd_session")  # as if it ended: idle, 8 hours, or signed out elsewhere
    browser.find("#audit-filters button[type=submit]").click()
    said = browser.wait(lambda d: d.find_element(By.ID, "sign-in-error").text)
    t.check("not done" in said and "CSRF" not in said, "an action on an ended session says it was not done and asks to sign in", said)
    browser.find("#admin-key").send_keys(args.owner_key)
    browser.find("#sign-in").click()
    browser.wait_heading("Audit log")
    t.check(driver.current_url.endswith("#/audit"), "signing in again returns to the same page", driver.current_url)
    first = driver.current_window_handle
    driver.switch_to.new_window("tab")
    driver.get(browser.base + "/console/")
    browser.wait_heading("App integrations")
    # The other tab signs in with the developer's key (as its sign-in form would): the browser's
    # one cookie is now the developer's session.
    status = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/console/session', {method: 'POST', headers: {'Content-Type': 'application/json'},"
        " body: JSON.stringify({key: arguments[0]})}).then(r => done(r.status));", args.developer_key)
    driver.close()
    driver.switch_to.window(first)
    browser.find("#audit-filters button[type=submit]").click()
    said = browser.wait(lambda d: d.find_element(By.ID, "session-changed").text)
    t.check(status == 200 and "another admin key" in said and "Devon" not in browser.find("main").text and "CSRF" not in said,
            "a second tab signed in with another key: the first shows nothing of it and says so", said)
    browser.shot("session-changed.png")
    # The 401 of the ended session is the browser's to log, as it should: not a page error.
    browser.collect_log()
    browser.errors = [e for e in browser.errors if "status of 401 (Unauthorized)" not in e]
    browser.find("#reload-session").click()  # continue as the developer, then sign out and back in as the owner
    browser.wait(lambda d: "Devon (developer)" in d.find_element(By.ID, "who").text)
    browser.sign_out()
    browser.sign_in(args.owner_key)


def key_lifecycle(t, browser):
    """Admin keys after the developer's use: its expiry and last use shown; a key made without
    expiry, disabled from its row (confirmed), focus back on its row, now offering Enable."""
    browser.driver.find_element(By.LINK_TEXT, "Admin keys").click()
    browser.wait_heading("Admin keys")
    devon = browser.wait(lambda d: d.find_element(By.XPATH, "//tr[td[1][text()='Devon (developer)']]")).text
    t.check("Never used" not in devon and devon.count(",") >= 2, "a key's expiry (90 days by default) and last use are listed", devon)
    browser.find("#key-name").send_keys("Temp (user)")
    Select(browser.find("#key-role")).select_by_value("user")
    Select(browser.find("#key-expiry")).select_by_value("")
    browser.find("#create-key").click()
    browser.wait(lambda d: d.find_element(By.ID, "new-key").get_attribute("value"))
    row = "//tr[td[1][text()='Temp (user)']]"
    temp = browser.wait(lambda d: d.find_element(By.XPATH, row))
    t.check("Never" in temp.text and "Never used" in temp.text, "a key made with No expiry lists Never and Never used", temp.text)
    temp.find_element(By.XPATH, ".//button[text()='Disable']").click()
    said = browser.wait(lambda d: d.find_element(By.ID, "confirm") if d.find_element(By.ID, "confirm").is_displayed() else None).text
    t.check("until you enable it" in said, "Disable asks for confirmation and says it can be undone", said)
    browser.find("#confirm-ok").click()
    browser.wait(lambda d: d.find_element(By.XPATH, row + "//span[contains(@class,'badge')]").text.lower() == "disabled")
    focused = browser.driver.switch_to.active_element
    t.check(focused.text == "Enable" and focused.get_attribute("aria-label") == "Enable the key Temp (user)",
            "the key shows as disabled and focus is back on its row, on Enable", focused.text)
    browser.shot("admin-keys-disabled.png")
    browser.wait(lambda d: d.find_element(By.XPATH, row)).find_element(By.XPATH, ".//button[text()='Revoke']").click()
    browser.wait(lambda d: d.find_element(By.ID, "confirm").is_displayed())
    browser.find("#key-leaked").click()
    browser.find("#confirm-ok").click()
    browser.wait(lambda d: d.find_element(By.XPATH, row + "//span[contains(@class,'badge')]").text.lower() == "revoked")
    t.check("Revoked Temp (user)'s key" in browser.find("#toast").text,
            "Revoke with It leaked ticked revokes the key (and what it created) from its row", browser.find("#toast").text)


def ownership_transfer(t, browser, args):
    """A primary owner (made by attestctl) offers the ownership to Olivia on Admin keys; Olivia
    signs in, accepts it from the banner, and is the primary owner."""
    made = run([os.path.join(args.bin, "attestctl"), "admin-key", "create", "--db", args.db, "--workspace", "ws_console",
                "--role", "primary_owner", "--name", "Pat (founder)"])
    browser.sign_out()
    browser.sign_in(made.stdout.strip())
    browser.wait(lambda d: "primary owner" in d.find_element(By.ID, "who").text.lower())
    browser.driver.find_element(By.LINK_TEXT, "Admin keys").click()
    browser.wait_heading("Admin keys")
    target = Select(browser.wait(lambda d: d.find_element(By.ID, "ownership-key")))
    target.select_by_visible_text("Olivia (owner) (owner)")
    browser.find("#offer-ownership").click()
    browser.wait(lambda d: d.find_element(By.ID, "confirm").is_displayed())
    browser.find("#confirm-ok").click()
    offered = browser.wait(lambda d: d.find_element(By.ID, "ownership-offer")).text
    t.check("Olivia (owner)" in offered, "the primary owner offers the ownership to another key on Admin keys", offered)
    browser.sign_out()
    browser.sign_in(args.owner_key)
    banner = browser.wait(lambda d: d.find_element(By.ID, "banner") if d.find_element(By.ID, "banner").is_displayed() else None)
    t.check("offers you the ownership" in banner.text, "the offered key's holder sees the offer on signing in", banner.text)
    browser.shot("ownership-offer.png")
    browser.find("#accept-ownership").click()
    browser.wait(lambda d: d.find_element(By.ID, "confirm").is_displayed())
    browser.find("#confirm-ok").click()
    browser.wait(lambda d: "primary owner" in d.find_element(By.ID, "who").text.lower() and not d.find_element(By.ID, "banner").is_displayed())
    t.pass_("accepting makes the key the primary owner at once (the header says so, the banner goes)")


def rows_key(browser):
    """The key IDs of the devices listed now."""
    return [row.get_attribute("data-key-id") for row in browser.driver.find_elements(By.CSS_SELECTOR, "tbody tr[data-key-id]")]


def find_device(t, browser, blocked):
    """Devices finds one device by the start of its key ID, and filters by status."""
    browser.find("#device-search").send_keys(blocked[:9])
    browser.find("#device-filters button[type=submit]").click()
    browser.wait(lambda d: rows_key(browser) == [blocked])
    t.check(rows_key(browser) == [blocked], "Devices finds a device by the first 9 hex digits of its key ID")
    browser.find("#device-search").clear()
    Select(browser.find("#device-status")).select_by_value("active")
    browser.find("#device-filters button[type=submit]").click()
    browser.wait(lambda d: len(rows_key(browser)) == 2)
    t.check(blocked not in rows_key(browser) and len(rows_key(browser)) == 2, "the status filter shows the 2 active devices only")
    Select(browser.find("#device-status")).select_by_value("")
    Select(browser.find("#device-sort")).select_by_value("last_seen")
    browser.find("#device-filters button[type=submit]").click()
    browser.wait(lambda d: len(rows_key(browser)) == 3 and rows_key(browser)[0] == blocked)
    t.check(rows_key(browser)[0] == blocked, "Last seen first lists the device blocked a moment ago first")
    # Back to the active devices, newest first, as the steps after expect.
    Select(browser.find("#device-status")).select_by_value("active")
    Select(browser.find("#device-sort")).select_by_value("newest")
    browser.find("#device-filters button[type=submit]").click()
    browser.wait(lambda d: len(rows_key(browser)) == 2)


def revoke_in_console(t, browser, attestd, tokens):
    """Revoke, confirmed by typing the name (a mistyped one first)."""
    browser.driver.find_element(By.LINK_TEXT, "Overview").click()
    browser.wait(lambda d: d.find_element(By.ID, "revoke")).click()
    dialog = browser.wait(lambda d: d.find_element(By.ID, "confirm") if d.find_element(By.ID, "confirm").is_displayed() else None)
    said = dialog.text
    t.check("permanent" in said and "live access tokens stop working" in said and "devices are blocked" in said,
            "Revoke asks for confirmation and names what will happen", said)
    browser.shot("revoke-confirmation.png")
    browser.find("#confirm-input").send_keys("Message")
    browser.find("#confirm-ok").click()
    wrong = browser.wait(lambda d: d.find_element(By.ID, "confirm-error").text)
    t.check("Messages" in wrong and browser.find("#confirm").is_displayed(), "a mistyped name does not revoke", wrong)
    browser.find("#confirm-input").send_keys("s")
    browser.find("#confirm-ok").click()
    browser.wait(lambda d: d.find_element(By.CSS_SELECTOR, ".heading .badge").text.lower() == "revoked")
    t.check(not browser.present("#revoke"), "the integration shows as revoked, with no Revoke control left")
    t.check(all(authorize(attestd.port, token) == 401 for token in tokens), "every token of its devices is refused by /v1/authorize")
    browser.shot("revoked.png")


def audit_and_keys(t, browser, args):
    """The audit log, a developer key made on Admin keys (args.developer_key), sign-out."""
    browser.driver.find_element(By.LINK_TEXT, "Audit log").click()
    browser.wait_heading("Audit log")
    audit = browser.wait(lambda d: d.find_element(By.CSS_SELECTOR, "main table")).text
    t.check("integration.revoke" in audit and "device.block" in audit and "Olivia (owner)" in audit,
            "the audit log shows the changes under the key's name")
    t.check(audit.index("integration.revoke") < audit.index("device.block") and "console.sign-in" not in audit,
            "newest first, and changes only until sign-ins are asked for")
    Select(browser.find("#audit-action")).select_by_value("device.block,device.unblock,token.revoke")
    browser.find("#audit-filters button[type=submit]").click()
    browser.wait(lambda d: "integration.revoke" not in d.find_element(By.CSS_SELECTOR, "main .page-region").text)
    filtered = browser.find("main .page-region").text
    t.check("device.block" in filtered and "integration.revoke" not in filtered, "the action filter narrows the log")
    t.check("format=csv" in browser.find("#audit-export-csv").get_attribute("href")
            and "action=device.block" in browser.find("#audit-export-csv").get_attribute("href"),
            "Export CSV exports what the filters show")
    browser.shot("audit.png")
    browser.driver.find_element(By.LINK_TEXT, "Your sessions").click()
    browser.wait_heading("Your sessions")
    rows = browser.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#sessions-table tbody tr"))
    t.check(len(rows) == 1 and "this browser" in rows[0].text.lower(), "Your sessions lists this browser's session")
    browser.shot("sessions.png")
    browser.driver.find_element(By.LINK_TEXT, "Admin keys").click()
    browser.wait_heading("Admin keys")
    offered = [o.get_attribute("value") for o in browser.driver.find_elements(By.CSS_SELECTOR, "#key-role option")]
    t.check("owner" in offered and "primary_owner" not in offered, "an owner may create keys up to the owner role, not above",
            ", ".join(offered))
    browser.find("#key-name").send_keys("Devon (developer)")
    browser.find("#create-key").click()
    secret = browser.wait(lambda d: d.find_element(By.ID, "new-key").get_attribute("value"))
    listed = browser.find("main table").text
    t.check(secret.startswith("adm_") and "Devon (developer)" in listed and secret not in listed,
            "Admin keys creates a developer key, shown once, listed without its secret")
    args.developer_key = secret
    browser.shot("admin-keys.png")
    session_failures(t, browser, args)
    key_lifecycle(t, browser)
    ownership_transfer(t, browser, args)
    browser.driver.find_element(By.LINK_TEXT, "App integrations").click()
    browser.wait_heading("App integrations")
    browser.shot("integrations.png")
    browser.collect_log()
    browser.sign_out()
    t.pass_("sign-out returns to the sign-in page")


def developer_flow(t, browser, args, client_id):
    browser.sign_in(args.developer_key)
    listed = browser.wait(lambda d: d.find_element(By.CSS_SELECTOR, "main table")).text
    t.check("Messages" in listed and not browser.present("#create-integration"),
            "a developer (the key the owner made in the console) sees the integrations but no Create app integration control")
    t.check(not browser.find("#nav-keys").is_displayed(), "a developer has no Admin keys screen")
    browser.driver.get(browser.base + "/console/#/integrations/" + client_id)
    browser.wait(lambda d: d.find_element(By.ID, "client-id"))
    t.check(not browser.present("#revoke") and not browser.present("#suspend"), "a developer's Overview has no Revoke or Suspend control")
    browser.driver.find_element(By.LINK_TEXT, "Devices").click()
    browser.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "tbody tr[data-key-id]"))
    t.check(not browser.driver.find_elements(By.CSS_SELECTOR, "tbody button"), "a developer's Devices has no Block control")
    browser.collect_log()
    browser.sign_out()


def keyboard_flow(t, browser, args):
    """Sign in and create an integration with the keyboard only: Tab, typing, Enter."""
    driver = browser.driver
    driver.get(browser.base + "/console/")
    browser.wait(lambda d: d.switch_to.active_element.get_attribute("id") == "admin-key")
    driver.switch_to.active_element.send_keys(args.owner_key, Keys.ENTER)
    browser.wait_heading("App integrations")

    def tab_to(element_id, limit=40):
        for _ in range(limit):
            if driver.switch_to.active_element.get_attribute("id") == element_id:
                return True
            driver.switch_to.active_element.send_keys(Keys.TAB)
        return False

    reached = tab_to("create-integration")
    if reached:
        driver.switch_to.active_element.send_keys(Keys.ENTER)
        browser.wait_heading("Create app integration")
        reached = tab_to("name")
        driver.switch_to.active_element.send_keys("Keyboard app", Keys.TAB, TEAM, Keys.TAB, "com.example.keys", Keys.TAB)
        # The environment select: the arrow key picks "Development".
        driver.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
        reached = reached and tab_to("create-submit")
        driver.switch_to.active_element.send_keys(Keys.ENTER)
    try:
        browser.wait_heading("Keyboard app")
        shown = browser.find("main dl").text
        ok = reached and "Development" in shown and "com.example.keys" in shown
    except TimeoutException:
        ok, shown = False, "no Overview"
    t.check(ok, "an integration is created from the keyboard alone (Tab, typing, arrows, Enter)", shown[:200])
    # The picture for docs/console.png: the list with live and revoked integrations, no toast.
    driver.get(browser.base + "/console/#/integrations")
    browser.wait(lambda d: any("Keyboard app" in row.text for row in d.find_elements(By.CSS_SELECTOR, "tbody tr")))
    driver.execute_script("const t = document.getElementById('toast'); t.textContent = ''; t.classList.remove('visible');")
    time.sleep(0.3)
    browser.shot("console.png")
    browser.collect_log()


def contrast(css_color):
    """The contrast ratio of an rgb()/rgba() colour against white (WCAG 2)."""
    parts = [float(x) for x in css_color[css_color.index("(") + 1:css_color.index(")")].split(",")[:3]]

    def linear(channel):
        channel /= 255
        return channel / 12.92 if channel <= 0.03928 else ((channel + 0.055) / 1.055) ** 2.4
    luminance = 0.2126 * linear(parts[0]) + 0.7152 * linear(parts[1]) + 0.0722 * linear(parts[2])
    return 1.05 / (luminance + 0.05)


def phone_flow(t, browser, client_id):
    """The same screens at 390 x 844 (a phone): no horizontal scrolling, the navigation reachable,
    every table readable as cards; the controls' borders and the focus ring at 3:1 or more."""
    driver = browser.driver
    driver.set_window_size(390, 844)
    wide = []
    try:
        for route, heading, name in [("#/integrations", "App integrations", "phone-integrations.png"),
                                     ("#/integrations/%s/devices" % client_id, "Messages devices", "phone-devices.png"),
                                     ("#/audit", "Audit log", "phone-audit.png")]:
            driver.get(browser.base + "/console/" + route)
            browser.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "main table, main .empty"))
            width = driver.execute_script("return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            if width[0] > width[1]:
                wide.append("%s: %d > %d" % (route, width[0], width[1]))
            browser.shot(name)
        t.check(not wide, "at 390 x 844 no screen scrolls sideways (integrations, devices, audit log)", "; ".join(wide))
        labelled = driver.execute_script(
            "return [...document.querySelectorAll('main tbody td')].every(td => td.dataset.label !== undefined || td.textContent === '')")
        t.check(labelled and browser.find("#nav").is_displayed(), "on a phone each table cell is labelled with its column, and the navigation shows")
        field = browser.find("#audit-actor")
        border = driver.execute_script("return getComputedStyle(arguments[0]).borderTopColor", field)
        ring = driver.execute_script("return getComputedStyle(document.documentElement).getPropertyValue('--focus').trim()")
        ring_rgb = "rgb(%d, %d, %d)" % tuple(int(ring[i:i + 2], 16) for i in (1, 3, 5))
        t.check(contrast(border) >= 3 and contrast(ring_rgb) >= 3,
                "input borders and the focus ring have at least 3:1 contrast against white (%.1f:1, %.1f:1)"
                % (contrast(border), contrast(ring_rgb)), "%s %s" % (border, ring))
    finally:
        driver.set_window_size(1280, 860)


def post_json(port, path, body):
    """POST a JSON body to the device listener: (status, parsed answer)."""
    request = urllib.request.Request("http://%s:%d%s" % (HOST, port, path), data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def verifications_chart(t, browser, attestd, client_id):
    """One attestation refused (not CBOR), then the Verifications tab: the simulated devices' 3
    attestations and 3 assertions verified, the refusal by its reason, after the next purge tick."""
    _, challenge = post_json(attestd.port, "/v1/challenge", {"client_id": client_id})
    status, refused = post_json(attestd.port, "/v1/attest", {"client_id": client_id, "key_id": base64.b64encode(bytes(32)).decode(),
                                                              "attestation": "AAAA", "challenge": challenge.get("challenge", "")})
    reason = refused.get("reason", "")
    t.check(status in (400, 401) and reason, "a garbage attestation is refused", "%d %s" % (status, refused))
    browser.driver.find_element(By.LINK_TEXT, "Verifications").click()
    browser.wait(lambda d: d.find_element(By.ID, "verification-chart"))

    def counted(driver):
        label = driver.find_element(By.ID, "verification-chart").get_attribute("aria-label")
        if label.startswith("6 verified and 1 refused"):
            return label
        driver.find_element(By.ID, "range-24h").click()  # counts land at the purge tick (--purge-interval 1): ask again
        return None
    label = browser.wait(counted)
    reasons = browser.find("#refusal-reasons").text
    t.check(reason in reasons and "6" in browser.find("#verification-table").text,
            "Verifications charts the 6 verifications and the refusal, its reason listed", label + " / " + reasons)
    browser.find("#range-30d").click()
    browser.wait(lambda d: d.find_element(By.ID, "range-30d").get_attribute("aria-pressed") == "true")
    t.check(browser.find("#verification-chart").get_attribute("aria-label").endswith("over the last 30 days"),
            "the 30 days range shows the same counts per day")
    browser.find("#range-24h").click()
    browser.wait(lambda d: d.find_element(By.ID, "range-24h").get_attribute("aria-pressed") == "true")
    browser.shot("verifications.png")


def exchange_debug_token(port, client_id, secret):
    """POST /v1/debug-token as a Simulator build would: (status, body)."""
    body = json.dumps({"client_id": client_id, "debug_token": secret}).encode()
    request = urllib.request.Request("http://%s:%d/v1/debug-token" % (HOST, port), data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def authorize_headers(port, token):
    request = urllib.request.Request("http://%s:%d/v1/authorize" % (HOST, port), headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=5) as response:
        return dict(response.headers)


def debug_token_flow(t, browser, args, attestd):
    """A developer makes a debug token on the Debug tokens tab, a Simulator build exchanges it, and revoking it kills its tokens."""
    made = run([os.path.join(args.bin, "attestctl"), "integration", "create", "--db", args.db, "--workspace", "ws_console",
                "--name", "Simulator app", "--team-id", TEAM, "--bundle-id", BUNDLE])
    client_id = made.stdout.strip().split()[-1] if made.returncode == 0 else ""
    if not t.check(client_id.startswith("clid_"), "attestctl makes a second integration for the debug tokens", made.stderr[-300:]):
        return
    browser.sign_in(args.developer_key)
    browser.driver.get(browser.base + "/console/#/integrations/" + client_id + "/debug-tokens")
    browser.wait_heading("Simulator app")
    browser.find("#debug-name").send_keys("CI")
    browser.find("#create-debug-token").click()
    secret = browser.wait(lambda d: d.find_element(By.ID, "new-debug-token").get_attribute("value"))
    listed = browser.find("main table").text
    t.check(secret.startswith("dbg_") and len(secret) == 47 and "CI" in listed and secret not in listed,
            "a developer creates a debug token on the Debug tokens tab: shown once, listed without its secret")
    browser.shot("debug-tokens.png")
    status, body = exchange_debug_token(attestd.port, client_id, secret)
    token = body.get("access_token", "")
    t.check(status == 200 and body.get("debug") is True and authorize(attestd.port, token) == 200
            and authorize_headers(attestd.port, token).get("Attest-Debug") == "true",
            "a Simulator build exchanges it for an access token that /v1/authorize marks Attest-Debug: true", "%d %s" % (status, body))
    browser.driver.find_element(By.LINK_TEXT, "Overview").click()
    live = browser.wait(lambda d: d.find_element(By.ID, "live-debug-tokens")).text
    t.check(live == "1", "the integration's Overview counts its live debug tokens", live)
    browser.driver.find_element(By.LINK_TEXT, "Debug tokens").click()
    row = browser.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "tbody tr[data-debug-token]"))[0]
    cells = [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
    t.check(cells[4] == "1" and cells[3] != "Never", "the list shows the access token it minted and its last use", " | ".join(cells))
    row.find_element(By.TAG_NAME, "button").click()
    said = browser.wait(lambda d: d.find_element(By.ID, "confirm") if d.find_element(By.ID, "confirm").is_displayed() else None).text
    browser.find("#confirm-ok").click()
    browser.wait(lambda d: "revoked" in d.find_elements(By.CSS_SELECTOR, "tbody tr[data-debug-token]")[0].text.lower())
    t.check("stops working at once" in said and authorize(attestd.port, token) == 401
            and exchange_debug_token(attestd.port, client_id, secret)[0] == 401,
            "Revoke asks first, then its access token is refused at once and it exchanges no more", said)
    browser.collect_log()
    browser.sign_out()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--artifacts", required=True)
    parser.add_argument("--docs-screenshot")
    args = parser.parse_args()
    t = Tally()
    attestctl = os.path.join(args.bin, "attestctl")
    db = args.db = os.path.join(args.work, "console.sqlite")
    root = os.path.join(args.work, "simulator-root.pem")
    args.state = os.path.join(args.work, "simulator")
    os.makedirs(args.artifacts, exist_ok=True)
    stale = os.path.join(args.artifacts, "failure.png")
    if os.path.exists(stale):  # a failed earlier run's picture, not this run's
        os.remove(stale)
    run([attestctl, "simulate", "--write-trust-anchor", root, "--state", args.state], check=True)
    attestd = Attestd(os.path.join(args.bin, "attestd"), os.path.join(args.work, "attestd.log"),
                      ["--db", db, "--trust-anchor", root, "--address-rate", "0", "--device-unblock", "on", "--purge-interval", "1"])
    if not t.check(attestd.started() and attestd.admin_port, "attestd starts with its admin listener on loopback",
                   attestd.log_text()[-600:]):
        return t.finish()
    made = run([attestctl, "admin-key", "create", "--db", db, "--workspace", "ws_console", "--role", "owner", "--name", "Olivia (owner)"])
    args.owner_key = made.stdout.strip()
    t.check(args.owner_key.startswith("adm_"), "attestctl admin-key create makes the workspace's first owner key", made.stderr[-300:])
    base = "http://%s:%d" % (HOST, attestd.admin_port)
    with urllib.request.urlopen(base + "/console/", timeout=5) as response:
        headers = response.headers
    t.check(headers.get("Content-Security-Policy") == "default-src 'self'; frame-ancestors 'none'"
            and headers.get("X-Content-Type-Options") == "nosniff" and headers.get("Referrer-Policy") == "no-referrer",
            "the console page is sent with the CSP, nosniff and no-referrer")
    browser = Console(base, os.path.join(args.work, "chromium"), args.artifacts)
    try:
        client_id = owner_flow(t, browser, args, attestd, args.work)
        developer_flow(t, browser, args, client_id)
        debug_token_flow(t, browser, args, attestd)
        keyboard_flow(t, browser, args)
        phone_flow(t, browser, client_id)
    except Exception as error:  # a step that timed out or found nothing: one FAIL with where, not a traceback
        browser.shot("failure.png")
        t.fail("the browser run stopped early", "%s: %s (see %s)" % (type(error).__name__, str(error).splitlines()[0] if str(error) else "",
                                                                    os.path.join(args.artifacts, "failure.png")))
    finally:
        browser.collect_log()
        browser.quit()
        attestd.stop()
    t.check(not browser.errors, "no page logged an error (no CSP violation, no failed script)", "; ".join(browser.errors)[:600])
    overview = os.path.join(args.artifacts, "console.png")
    if args.docs_screenshot and os.path.exists(overview):
        shutil.copyfile(overview, args.docs_screenshot)
    print("screenshots in %s" % args.artifacts)
    return t.finish()


if __name__ == "__main__":
    sys.exit(main())
