// Package site is the simulated news site of the Personalizer tests
// (service's TestPersonalizerLearnsSite, define's TestDefaultLearnerStudy):
// readers in a weather on a device, three articles whose click
// probabilities depend on the context.
package site

// The site's contexts and articles, by index.
var (
	Weathers = []string{"sunny", "rainy", "snowy"}
	Devices  = []string{"mobile", "desktop"}
	Articles = []string{"sports", "politics", "recipes"}
)

// Click is the probability that a reader in weather w on device d clicks
// article a: 0.75 for the weather's article (sports when sunny, politics
// when rainy, recipes when snowy), 0.15 otherwise, +0.1 for recipes on
// mobile.
func Click(w, d, a int) float64 {
	p := 0.15
	if a == w {
		p = 0.75
	}
	if a == 2 && d == 0 {
		p += 0.1
	}
	return p
}
