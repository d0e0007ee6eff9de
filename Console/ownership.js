// The workspace's ownership, passed on in two steps: the primary owner offers it to another key
// (the Admin keys page), whose holder accepts it from the banner every page shows them; the
// two keys' roles swap at once. An offer lapses after a day.
import { api } from "./api.js";
import { h, when, toast, confirmDialog } from "./dom.js";
import { guarded } from "./guard.js";

/** The banner offering the ownership to the signed-in key, or nothing; `accepted` runs after. */
export async function ownershipBanner(session, accepted) {
  const banner = document.getElementById("banner");
  const { offer } = session ? await api.get("/admin/v1/ownership") : { offer: null };
  if (!offer || offer.to_key_id !== session.key_id) {
    banner.hidden = true;
    banner.replaceChildren();
    return;
  }
  const accept = h("button", { type: "button", id: "accept-ownership", class: "small" }, "Accept ownership");
  accept.addEventListener("click", guarded(async () => {
    const ok = await confirmDialog({
      title: `Become the primary owner of ${session.workspace_id}?`,
      body: [h("p", {}, "Your key becomes the workspace's primary owner, which no other key can revoke, disable or demote. "
        + "The key that offered it becomes an owner.")],
      action: "Accept ownership",
    });
    if (!ok) return;
    await api.post("/admin/v1/ownership/accept", {});
    toast("You are the primary owner of this workspace.");
    await accepted();
  }));
  banner.replaceChildren(h("p", { role: "status" },
    `The primary owner offers you the ownership of ${session.workspace_id}, until ${when(offer.expires_at)}. `), accept);
  banner.hidden = false;
}

/** The Admin keys page's card for the primary owner: the open offer and Withdraw, or Offer. */
export async function ownershipCard(session, keys, rerender) {
  if (session.role !== "primary_owner") return null;
  const { offer } = await api.get("/admin/v1/ownership");
  const now = Date.now() / 1000;
  const card = h("section", { class: "card", "aria-labelledby": "ownership-title" }, h("h2", { id: "ownership-title" }, "Workspace ownership"));
  if (offer) {
    const to = keys.find((k) => k.id === offer.to_key_id);
    const withdraw = h("button", { type: "button", class: "quiet", id: "withdraw-ownership" }, "Withdraw offer");
    withdraw.addEventListener("click", guarded(async () => {
      await api.delete("/admin/v1/ownership/offer");
      toast("Offer withdrawn.");
      await rerender();
    }));
    card.append(h("p", { id: "ownership-offer" }, `Offered to ${to ? to.name : offer.to_key_id} until ${when(offer.expires_at)}: `
      + "their key becomes the primary owner, and yours an owner, when they accept."), h("div", { class: "actions start" }, withdraw));
    return card;
  }
  const eligible = keys.filter((k) => k.id !== session.key_id && k.status === "active" && (!k.expires_at || k.expires_at > now));
  if (eligible.length === 0) {
    card.append(h("p", { class: "muted" }, "Create a key for the person who will own the workspace, then offer it the ownership here."));
    return card;
  }
  const target = h("select", { id: "ownership-key", name: "key_id" }, eligible.map((k) => h("option", { value: k.id }, `${k.name} (${k.role.replace("_", " ")})`)));
  const offerButton = h("button", { type: "button", id: "offer-ownership", class: "quiet" }, "Offer ownership");
  offerButton.addEventListener("click", guarded(async () => {
    const name = target.selectedOptions[0].textContent;
    const ok = await confirmDialog({
      title: `Offer the ownership to ${name}?`,
      body: [h("p", {}, "They have a day to accept it. When they do, their key becomes the primary owner and yours an owner: "
        + "you cannot take it back yourself.")],
      action: "Offer ownership",
    });
    if (!ok) return;
    await api.post("/admin/v1/ownership/offer", { key_id: target.value });
    toast(`Ownership offered to ${name}.`);
    await rerender();
  }));
  card.append(h("p", { class: "muted" }, "Pass the primary ownership to another key of the workspace; its holder accepts it within a day."),
    h("div", { class: "field" }, h("label", { for: "ownership-key" }, "Offer to"), target), h("div", { class: "actions start" }, offerButton));
  return card;
}
