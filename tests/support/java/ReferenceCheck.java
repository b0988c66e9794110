import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The config variables Kafka finds in a value: ConfigTransformer.DEFAULT_PATTERN and the group
 * use of ConfigTransformer.getVars (clients/.../common/config/ConfigTransformer.java, Kafka
 * 3.8.0). One value per input line; per line, one output line of matches, each as
 * provider, path (empty when absent) and key, fields separated by U+0001, matches by U+0002.
 */
public class ReferenceCheck {
    static final Pattern DEFAULT_PATTERN = Pattern.compile("\\$\\{([^}]*?):(([^}]*?):)?([^}]*?)\\}");

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            Matcher m = DEFAULT_PATTERN.matcher(line);
            StringBuilder row = new StringBuilder();
            while (m.find()) {
                if (row.length() > 0) row.append('\u0002');
                String path = m.group(3) == null ? "" : m.group(3);
                row.append(m.group(1)).append('\u0001').append(path).append('\u0001').append(m.group(4));
            }
            out.append(row).append('\n');
        }
        System.out.print(out);
    }
}
