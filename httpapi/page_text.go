package httpapi

import (
	"maps"
	"slices"
)

// pageTexts are the request page's words, by language and key. A text's {name}s
// are filled in by the page. RequestPageOptions.Texts replaces any of them.
var pageTexts = map[string]map[string]string{
	"en": {
		"page.title":   "Your request",
		"page.refresh": "This page updates itself every {seconds} seconds; there is no need to reload it.",
		"page.id":      "Request",

		"waiting.title": "You are in line",
		"waiting.ahead": "{ahead} ahead of you.",
		"waiting.wait":  "About {wait} to go.",
		"waiting.next":  "Keep this page open: it shows your result as soon as it is decided.",

		"prequeue.title":      "You are in",
		"prequeue.drawn":      "Everyone who entered before the start is served in an order drawn at the start.",
		"prequeue.seats":      "{seats} seats.",
		"prequeue.placeTitle": "The order is drawn",
		"prequeue.place":      "Your place in the drawn order: {place} of {entries}.",
		"prequeue.lateTitle":  "You are in line after the drawn order",
		"prequeue.late":       "Your entry reached us after the order was drawn: you are served after it, in the order you came.",

		"held.title":   "A seat is held for you",
		"held.left":    "Pay by {until}: {left} left.",
		"held.next":    "If you do not pay in time, the seat goes to the next person waiting.",
		"held.pay":     "Pay now",
		"held.release": "Give up the seat",

		"waitlisted.title":   "Sold out: you are on the waitlist",
		"waitlisted.ahead":   "{ahead} ahead of you on the waitlist.",
		"waitlisted.ends":    "The waitlist ends at {until}.",
		"waitlisted.next":    "When a seat is given back, it goes to the first on the waitlist, who then has a seat held to pay for.",
		"waitlisted.release": "Leave the waitlist",

		"entered.title":   "You are entered in the draw",
		"entered.draw":    "The draw is after {at}.",
		"entered.drawing": "The draw is under way.",

		"won.seat.title":       "You got a seat",
		"won.seat.body":        "The seat is yours.",
		"won.lottery.title":    "You won the draw",
		"won.lottery.body":     "Congratulations: you were drawn.",
		"lost.soldOut.title":   "Sold out",
		"lost.soldOut.body":    "Every seat was taken before your turn.",
		"lost.lottery.title":   "Not drawn this time",
		"lost.lottery.body":    "You were not among the winners of the draw.",
		"lost.released.title":  "You gave up your place",
		"lost.released.body":   "You released it; it went to the next person waiting.",
		"lost.expired.title":   "The hold ran out",
		"lost.expired.body":    "The seat was not paid for in time and went to the next person waiting.",
		"lost.cancelled.title": "Cancelled",
		"lost.cancelled.body":  "Your participation was cancelled by the organiser.",
		"lost.closed.title":    "Too late",
		"lost.closed.body":     "Your request reached us after the event had closed its entries.",
		"lost.duplicate.title": "Already entered",
		"lost.duplicate.body":  "You had entered already; your first entry is the one that counts.",
		"failed.again.title":   "Your click did not go through",
		"failed.again.body":    "Nothing was kept of it. Go back to the event and try again.",
		"failed.ours.title":    "Something went wrong on our side",
		"failed.ours.body":     "We could not finish your request. Contact the organiser; your request number is below.",

		"verify.title":       "Check the draw yourself",
		"verify.body":        "The seed was committed to before anyone entered, and revealed by the draw. Your score is SHA-256 of the seed, the entries' hash and your request ID; the lowest scores come first.",
		"verify.commitment":  "Commitment (SHA-256 of the seed)",
		"verify.seed":        "Seed",
		"verify.entriesHash": "Entries' hash ({entries} entries)",
		"verify.score":       "Your score",

		"badLink.title":     "This link is not valid",
		"badLink.body":      "Check the link you followed.",
		"signIn.title":      "Sign in to see your request",
		"signIn.body":       "Your session has ended, or you are not signed in.",
		"notFound.title":    "No such request",
		"notFound.body":     "There is no request of yours at this link.",
		"forbidden.title":   "This form has expired",
		"forbidden.body":    "Go back to your request's page and try again.",
		"unavailable.title": "Try again in a moment",
		"unavailable.body":  "We could not read your request just now.",
	},
	"ko": {
		"page.title":   "신청 현황",
		"page.refresh": "이 페이지는 {seconds}초마다 자동으로 갱신됩니다. 새로고침하지 않아도 됩니다.",
		"page.id":      "신청 번호",

		"waiting.title": "대기열에 있습니다",
		"waiting.ahead": "앞에 {ahead}명이 있습니다.",
		"waiting.wait":  "약 {wait} 남았습니다.",
		"waiting.next":  "이 페이지를 열어 두세요. 결과가 나오면 바로 보여 드립니다.",

		"prequeue.title":      "사전 대기에 들어왔습니다",
		"prequeue.drawn":      "시작 전에 들어온 모든 분은 시작 시각에 추첨으로 정한 순서대로 처리됩니다.",
		"prequeue.seats":      "좌석 {seats}석.",
		"prequeue.placeTitle": "순서가 정해졌습니다",
		"prequeue.place":      "추첨 순서에서 내 자리: {entries}명 중 {place}번째.",
		"prequeue.lateTitle":  "추첨 순서 다음 대기열에 있습니다",
		"prequeue.late":       "순서를 추첨한 뒤에 신청이 도착했습니다. 추첨 순서 다음에, 도착한 순서대로 처리됩니다.",

		"held.title":   "좌석을 잡아 두었습니다",
		"held.left":    "{until}까지 결제하세요. {left} 남았습니다.",
		"held.next":    "시간 안에 결제하지 않으면 좌석은 다음 대기자에게 넘어갑니다.",
		"held.pay":     "지금 결제",
		"held.release": "좌석 포기",

		"waitlisted.title":   "매진: 대기자 명단에 있습니다",
		"waitlisted.ahead":   "대기자 명단에서 앞에 {ahead}명이 있습니다.",
		"waitlisted.ends":    "대기자 명단은 {until}에 마감됩니다.",
		"waitlisted.next":    "반환된 좌석은 명단의 첫 번째 분에게 가며, 그분은 결제할 좌석을 잡게 됩니다.",
		"waitlisted.release": "대기 취소",

		"entered.title":   "추첨에 응모했습니다",
		"entered.draw":    "추첨은 {at} 이후에 진행됩니다.",
		"entered.drawing": "추첨이 진행 중입니다.",

		"won.seat.title":       "좌석을 얻었습니다",
		"won.seat.body":        "좌석이 확정되었습니다.",
		"won.lottery.title":    "당첨되었습니다",
		"won.lottery.body":     "축하합니다. 추첨에서 뽑혔습니다.",
		"lost.soldOut.title":   "매진",
		"lost.soldOut.body":    "차례가 오기 전에 모든 좌석이 판매되었습니다.",
		"lost.lottery.title":   "이번에는 당첨되지 않았습니다",
		"lost.lottery.body":    "추첨 당첨자에 들지 못했습니다.",
		"lost.released.title":  "자리를 포기했습니다",
		"lost.released.body":   "포기한 자리는 다음 대기자에게 넘어갔습니다.",
		"lost.expired.title":   "결제 시간이 지났습니다",
		"lost.expired.body":    "시간 안에 결제되지 않아 좌석이 다음 대기자에게 넘어갔습니다.",
		"lost.cancelled.title": "취소되었습니다",
		"lost.cancelled.body":  "주최 측이 참여를 취소했습니다.",
		"lost.closed.title":    "마감 후 도착",
		"lost.closed.body":     "신청이 접수 마감 뒤에 도착했습니다.",
		"lost.duplicate.title": "이미 신청했습니다",
		"lost.duplicate.body":  "이미 신청하셨습니다. 첫 신청이 유효합니다.",
		"failed.again.title":   "신청이 접수되지 않았습니다",
		"failed.again.body":    "아무것도 저장되지 않았습니다. 이벤트 페이지로 돌아가 다시 시도하세요.",
		"failed.ours.title":    "저희 쪽에 문제가 생겼습니다",
		"failed.ours.body":     "신청을 끝내지 못했습니다. 아래 신청 번호로 주최 측에 문의하세요.",

		"verify.title":       "추첨을 직접 확인하기",
		"verify.body":        "시드는 응모 전에 공개 약속되었고 추첨 때 공개되었습니다. 내 점수는 시드, 응모 목록 해시, 신청 번호의 SHA-256이며, 점수가 낮은 순서로 앞섭니다.",
		"verify.commitment":  "약속값 (시드의 SHA-256)",
		"verify.seed":        "시드",
		"verify.entriesHash": "응모 목록 해시 ({entries}건)",
		"verify.score":       "내 점수",

		"badLink.title":     "올바르지 않은 링크입니다",
		"badLink.body":      "따라온 링크를 확인하세요.",
		"signIn.title":      "로그인하면 신청 현황을 볼 수 있습니다",
		"signIn.body":       "세션이 끝났거나 로그인하지 않았습니다.",
		"notFound.title":    "신청을 찾을 수 없습니다",
		"notFound.body":     "이 링크에 해당하는 내 신청이 없습니다.",
		"forbidden.title":   "양식이 만료되었습니다",
		"forbidden.body":    "신청 현황 페이지로 돌아가 다시 시도하세요.",
		"unavailable.title": "잠시 후 다시 시도하세요",
		"unavailable.body":  "지금은 신청을 읽을 수 없습니다.",
	},
}

// PageTextKeys returns the keys of the request page's texts, which
// RequestPageOptions.Texts may replace, sorted.
func PageTextKeys() []string {
	return slices.Sorted(maps.Keys(pageTexts["en"]))
}
