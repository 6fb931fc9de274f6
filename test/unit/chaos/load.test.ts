/** The chaos report's load figures sum up the sampled load averages. */
import { loadFigures } from "../../chaos/load";

describe("loadFigures", () => {
  it("gives the mean and max of the samples, rounded to hundredths", () => {
    expect(loadFigures([1, 2.5, 4.004])).toEqual({ samples: 3, mean: 2.5, max: 4 });
  });

  it("gives zeros when nothing was sampled", () => {
    expect(loadFigures([])).toEqual({ samples: 0, mean: 0, max: 0 });
  });
});
