import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * The JDK's verdict on topic filters, as MirrorMaker 2 reaches it (Kafka 3.8.0
 * MirrorUtils.compilePatternList: the list joined with "|", Pattern.compile, then
 * Matcher.matches() per name).
 *
 * Input, one case per line: base64 filters separated by ',', a ';', base64 names separated by ','.
 * Output, one line per case: "E <description>" when Java rejects the joined pattern, otherwise
 * "M " followed by one '1' or '0' per name.
 */
public class RegexCheck {
    public static void main(String[] args) throws Exception {
        Base64.Decoder b64 = Base64.getDecoder();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            String[] halves = line.split(";", -1);
            List<String> filters = new ArrayList<>();
            for (String f : halves[0].split(",", -1)) {
                filters.add(new String(b64.decode(f), StandardCharsets.UTF_8));
            }
            Pattern pattern;
            try {
                pattern = Pattern.compile(String.join("|", filters));
            } catch (PatternSyntaxException e) {
                out.append("E ").append(e.getDescription().replace('\n', ' ')).append('\n');
                continue;
            }
            out.append("M ");
            if (!halves[1].isEmpty()) {
                for (String n : halves[1].split(",", -1)) {
                    String name = new String(b64.decode(n), StandardCharsets.UTF_8);
                    out.append(pattern.matcher(name).matches() ? '1' : '0');
                }
            }
            out.append('\n');
        }
        System.out.print(out);
    }
}
